package dev.varve.broker.security;

import dev.varve.metadata.FinalizedFeatures;
import dev.varve.metadata.MetadataRecord;
import dev.varve.storage.checkpoint.CheckpointFile;
import org.apache.kafka.common.message.UpdateFeaturesRequestData;
import org.apache.kafka.common.message.UpdateFeaturesResponseData;

import java.io.File;
import java.io.IOException;
import java.util.List;
import java.util.Map;

/**
 * The feature levels a single-node broker finalized with UpdateFeatures (a cluster keeps them in its
 * metadata log), in {@code <first log dir>/varve-features}: one feature per line, its name, level and
 * the features' epoch after it, for example {@code transaction.version 1 1}.
 */
public final class LocalFeatureStore {
    public static final String FILE_NAME = "varve-features";

    private static final CheckpointFile.Formatter<MetadataRecord.FeatureLevel> FORMAT = new CheckpointFile.Formatter<>() {
        @Override
        public String toLine(MetadataRecord.FeatureLevel f) {
            return f.name() + " " + f.level() + " " + f.epoch();
        }

        @Override
        public MetadataRecord.FeatureLevel fromLine(String line) {
            String[] p = line.split(" ");
            if (p.length != 3) {
                throw new IllegalArgumentException("expected a feature, a level and an epoch: " + line);
            }
            return new MetadataRecord.FeatureLevel(p[0], Short.parseShort(p[1]), Long.parseLong(p[2]));
        }
    };

    private final LocalRecordFile<FinalizedFeatures, MetadataRecord.FeatureLevel> file;

    public LocalFeatureStore(File dir) throws IOException {
        this.file = new LocalRecordFile<>(new File(dir, FILE_NAME), FORMAT, FinalizedFeatures.EMPTY, FinalizedFeatures::apply,
                f -> f.toRecords().stream().map(r -> (MetadataRecord.FeatureLevel) r).toList());
    }

    public FinalizedFeatures features() {
        return file.current();
    }

    /** Decides and applies an UpdateFeatures request; the file holds the result before this returns. */
    public UpdateFeaturesResponseData update(UpdateFeaturesRequestData request, Map<String, Short> inEffect,
                                             Map<String, Short> maxLevels) {
        return file.change(f -> f.update(request, inEffect, maxLevels));
    }

    List<MetadataRecord.FeatureLevel> records() {
        return file.current().toRecords().stream().map(r -> (MetadataRecord.FeatureLevel) r).toList();
    }
}
