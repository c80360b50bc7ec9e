import { useEffect, useState } from 'preact/hooks';
import { enc, get, query } from '../api.js';
import { ErrorBox } from '../components.jsx';
import { time } from '../format.js';

export function Messages({ params }) {
  const [topics, setTopics] = useState(null);
  const [form, setForm] = useState({
    topic: params.topic || '', partition: '0', start: 'earliest', offset: '', when: '', limit: '50', decode: 'text', filter: '',
  });
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    get('/topics').then((d) => {
      setTopics(d.topics);
      if (!form.topic && d.topics.length) setForm((f) => ({ ...f, topic: (d.topics.find((t) => !t.internal) || d.topics[0]).name }));
    }).catch(setError);
  }, []);
  const topic = topics && topics.find((t) => t.name === form.topic);
  const set = (k) => (e) => setForm({ ...form, [k]: e.target.value });

  const load = async (fromOffset) => {
    setBusy(true);
    setError(null);
    try {
      const p = { partition: form.partition, limit: form.limit, decode: form.decode, filter: form.filter };
      if (fromOffset !== undefined) p.offset = fromOffset;
      else if (form.start === 'offset') p.offset = form.offset;
      else if (form.start === 'timestamp') p.timestamp = form.when ? new Date(form.when + 'Z').getTime() : '';
      else p.from = form.start;
      setResult(await get('/topics/' + enc(form.topic) + '/messages' + query(p)));
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div>
      <h2>Messages</h2>
      <form class="card form" data-testid="browse" onSubmit={(e) => { e.preventDefault(); load(); }}>
        <label>Topic <select name="topic" value={form.topic} onChange={set('topic')}>
          {(topics || []).map((t) => <option value={t.name}>{t.name}</option>)}
        </select></label>
        <label>Partition <select name="partition" value={form.partition} onChange={set('partition')}>
          {Array.from({ length: topic ? topic.partitions : 1 }, (_, i) => <option value={String(i)}>{i}</option>)}
        </select></label>
        <label>Start <select name="start" value={form.start} onChange={set('start')}>
          <option value="earliest">earliest</option>
          <option value="newest">newest</option>
          <option value="offset">offset</option>
          <option value="timestamp">time</option>
        </select></label>
        {form.start === 'offset' && <label>Offset <input name="offset" type="number" min="0" required value={form.offset} onInput={set('offset')} /></label>}
        {form.start === 'timestamp' && <label>Time (UTC) <input name="when" type="datetime-local" step="1" required value={form.when} onInput={set('when')} /></label>}
        <label>Max <input name="limit" type="number" min="1" max="500" value={form.limit} onInput={set('limit')} /></label>
        <label>Decode as <select name="decode" value={form.decode} onChange={set('decode')}>
          <option value="text">text</option>
          <option value="json">JSON</option>
          <option value="hex">hex</option>
        </select></label>
        <label class="grow">Filter <input name="filter" placeholder="text in key, value or headers" value={form.filter} onInput={set('filter')} /></label>
        <button type="submit" class="primary" disabled={busy || !form.topic}>{busy ? 'Reading…' : 'Show'}</button>
      </form>
      <ErrorBox error={error} />
      {result && (
        <section>
          <p class="muted small" data-testid="summary">
            Partition {result.partition}: offsets {result.startOffset}–{result.endOffset}; read {result.scanned} from {result.from},
            showing {result.messages.length}{form.filter ? ' matching' : ''}.
            {result.stoppedEarly && ' Stopped early (time or size limit).'}
          </p>
          <table class="messages" data-testid="messages">
            <thead><tr><th class="num">Offset</th><th>Timestamp (UTC)</th><th>Key</th><th>Value</th><th>Headers</th></tr></thead>
            <tbody>
              {result.messages.map((m) => (
                <tr data-offset={m.offset}>
                  <td class="num">{m.offset}</td>
                  <td class="small nowrap" title={m.timestampType}>{time(m.timestamp)}</td>
                  <td class="mono"><Field v={m.key} as={m.keyAs} size={m.keySize} truncated={m.keyTruncated} /></td>
                  <td class="mono value"><Field v={m.value} as={m.valueAs} size={m.valueSize} truncated={m.valueTruncated} /></td>
                  <td class="mono small">{m.headers.map((h) => <div>{h.key}: {h.value === null ? 'null' : h.value}</div>)}</td>
                </tr>
              ))}
              {result.messages.length === 0 && <tr><td colSpan={5} class="muted">No messages{form.filter ? ' match' : ''} in what was read.</td></tr>}
            </tbody>
          </table>
          {result.more && <button type="button" onClick={() => load(result.nextOffset)} disabled={busy} data-testid="next">Next from offset {result.nextOffset}</button>}
        </section>
      )}
    </div>
  );
}

function Field({ v, as, size, truncated }) {
  if (v === null) return <span class="muted">null</span>;
  return (
    <>
      <pre>{v}</pre>
      {(truncated || as === 'hex' || as === 'json') && <div class="muted small">{as}{truncated ? ', first 64 KiB of ' + size + ' bytes' : ''}</div>}
    </>
  );
}
