package dev.varve.cli.client;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Locale;

/**
 * How {@code varve produce} and {@code varve consume} write record bytes as text and read them back:
 * {@code text} (UTF-8), {@code base64} or {@code hex}; and the backslash escapes their separators take.
 */
public enum Bytes {
    TEXT, BASE64, HEX;

    /** Parses {@code text|base64|hex} (any case), for picocli. */
    public static Bytes parse(String value) {
        try {
            return valueOf(value.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown encoding '" + value + "': use text, base64 or hex");
        }
    }

    static final class Converter implements picocli.CommandLine.ITypeConverter<Bytes> {
        @Override
        public Bytes convert(String value) {
            return parse(value);
        }
    }

    /** The bytes {@code s} stands for; an IllegalArgumentException says why it cannot be read. */
    public byte[] decode(String s) {
        switch (this) {
            case BASE64:
                try {
                    return Base64.getDecoder().decode(s.strip());
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("not base64: " + e.getMessage());
                }
            case HEX:
                try {
                    return HexFormat.of().parseHex(s.strip());
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("not hex: " + e.getMessage());
                }
            default:
                return s.getBytes(StandardCharsets.UTF_8);
        }
    }

    /** Raw input bytes (a line of the input) to the record bytes they stand for. */
    public byte[] decode(byte[] raw) {
        return this == TEXT ? raw : decode(new String(raw, StandardCharsets.US_ASCII));
    }

    /** {@code b} as text: UTF-8 (bytes that are not valid UTF-8 become {@code \xNN}), base64 or hex. */
    public String encode(byte[] b) {
        return switch (this) {
            case BASE64 -> Base64.getEncoder().encodeToString(b);
            case HEX -> HexFormat.of().formatHex(b);
            default -> utf8(b);
        };
    }

    /** {@code b} as UTF-8, each byte of an invalid sequence written as {@code \xNN}. */
    public static String utf8(byte[] b) {
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(b);
        CharBuffer out = CharBuffer.allocate(b.length);
        StringBuilder sb = null;
        while (true) {
            CoderResult r = decoder.decode(in, out, true);
            if (r.isUnderflow()) {
                decoder.flush(out);
                break;
            }
            if (r.isOverflow()) { // not expected (UTF-8 never gives more chars than bytes)
                out = grow(out);
                continue;
            }
            if (sb == null) {
                sb = new StringBuilder(b.length + 16);
            }
            out.flip();
            sb.append(out);
            out.clear();
            for (int i = 0; i < r.length(); i++) {
                sb.append(String.format("\\x%02x", in.get() & 0xff));
            }
        }
        out.flip();
        if (sb == null) {
            return out.toString();
        }
        return sb.append(out).toString();
    }

    private static CharBuffer grow(CharBuffer out) {
        CharBuffer bigger = CharBuffer.allocate(out.capacity() * 2 + 16);
        out.flip();
        bigger.put(out);
        return bigger;
    }

    /**
     * A separator as typed, with its escapes resolved: {@code \n}, {@code \r}, {@code \t}, {@code \0},
     * {@code \\} and {@code \xNN}; anything else stands for itself (as UTF-8).
     */
    public static byte[] unescape(String s) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c != '\\' || i == s.length() - 1) {
                out.writeBytes(String.valueOf(c).getBytes(StandardCharsets.UTF_8));
                continue;
            }
            char n = s.charAt(++i);
            switch (n) {
                case 'n' -> out.write('\n');
                case 'r' -> out.write('\r');
                case 't' -> out.write('\t');
                case '0' -> out.write(0);
                case '\\' -> out.write('\\');
                case 'x' -> {
                    if (i + 2 >= s.length()) {
                        throw new IllegalArgumentException("'\\x' needs two hex digits in '" + s + "'");
                    }
                    try {
                        out.write(Integer.parseInt(s.substring(i + 1, i + 3), 16));
                    } catch (RuntimeException e) {
                        throw new IllegalArgumentException("'\\x' needs two hex digits in '" + s + "'");
                    }
                    i += 2;
                }
                default -> throw new IllegalArgumentException("unknown escape '\\" + n + "' in '" + s
                        + "': use \\n, \\r, \\t, \\0, \\\\ or \\xNN");
            }
        }
        if (out.size() == 0) {
            throw new IllegalArgumentException("a separator cannot be empty");
        }
        return out.toByteArray();
    }
}
