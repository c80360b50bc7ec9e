package dev.varve.storage;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/** The storage engine stays a pure library: no network, no consensus, no threads of its own. */
class LayeringTest {
    private static final JavaClasses STORAGE = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.varve.storage");

    @Test
    void storageNeverTouchesTheNetworkOrRatis() {
        noClasses().should().dependOnClassesThat()
                .resideInAnyPackage("io.netty..", "org.apache.ratis..", "java.net..", "dev.varve.broker..", "dev.varve.metadata..")
                .check(STORAGE);
    }

    @Test
    void onlyTheInjectedSchedulerCreatesThreads() {
        noClasses().that().doNotHaveSimpleName("ExecutorScheduler")
                .should().dependOnClassesThat().haveFullyQualifiedName("java.lang.Thread")
                .check(STORAGE);
        noClasses().that().doNotHaveSimpleName("ExecutorScheduler")
                .should().dependOnClassesThat().haveSimpleNameContaining("Executor")
                .check(STORAGE);
    }

    @Test
    void decisionLogicIsPure() {
        noClasses().that().haveSimpleNameStartingWith("RetentionPolicy").or().haveSimpleName("BatchValidator")
                .or().haveSimpleNameStartingWith("ProducerStateTable").or().haveSimpleNameStartingWith("ProducerStateEntry")
                .should().dependOnClassesThat().resideInAnyPackage("java.io..", "java.nio.file..", "java.nio.channels..")
                .orShould().callMethod(System.class, "currentTimeMillis")
                .check(STORAGE);
    }

    @Test
    void noWallClockInsideTheEngine() {
        noClasses().should().callMethod(System.class, "currentTimeMillis")
                .orShould().callMethod(System.class, "nanoTime")
                .check(STORAGE);
    }
}
