package dev.varve.metadata;

import com.tngtech.archunit.ArchConfiguration;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/**
 * The metadata rules stay pure: records, image, placement, election and controller decisions never
 * touch Ratis, files, sockets, threads or the wall clock. Only {@code dev.varve.metadata.quorum} does I/O.
 */
class MetadataLayeringTest {
    private static final JavaClasses PURE = importPureClasses();

    /**
     * Imports only this package's main classes; dependencies stay unresolved stubs (their names are all
     * the rules need), which keeps the import from walking kafka-clients and Ratis (seconds on a busy box).
     */
    private static JavaClasses importPureClasses() {
        ArchConfiguration archConfig = ArchConfiguration.get();
        boolean resolve = archConfig.resolveMissingDependenciesFromClassPath();
        archConfig.setResolveMissingDependenciesFromClassPath(false);
        try {
            return new ClassFileImporter()
                    .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                    .withImportOption(location -> !location.contains("/dev/varve/metadata/quorum/"))
                    .importPackages("dev.varve.metadata");
        } finally {
            archConfig.setResolveMissingDependenciesFromClassPath(resolve);
        }
    }

    @Test
    void pureMetadataNeverTouchesRatisFilesOrSockets() {
        noClasses().that().resideOutsideOfPackage("dev.varve.metadata.quorum..")
                .should().dependOnClassesThat().resideInAnyPackage("org.apache.ratis..", "java.net..", "java.nio.file..",
                        "java.nio.channels..", "dev.varve.metadata.quorum..")
                .orShould().dependOnClassesThat().haveSimpleNameStartingWith("File")
                .check(PURE);
    }

    @Test
    void pureMetadataHasNoThreadsOrClock() {
        noClasses().that().resideOutsideOfPackage("dev.varve.metadata.quorum..")
                .should().dependOnClassesThat().resideInAnyPackage("java.util.concurrent..")
                .orShould().dependOnClassesThat().haveFullyQualifiedName("java.lang.Thread")
                .orShould().dependOnClassesThat().haveFullyQualifiedName("java.lang.Runnable")
                .orShould().dependOnClassesThat().haveFullyQualifiedName("java.time.Clock")
                .orShould().callMethod(System.class, "currentTimeMillis")
                .orShould().callMethod(System.class, "nanoTime")
                .check(PURE);
    }
}
