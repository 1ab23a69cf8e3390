package dev.relay.transport.kafka;

/**
 * One broker for the whole test JVM: starting Kafka costs seconds, so the test classes share it
 * (they run one after another and use topics of their own). Killed when the JVM exits.
 */
final class SharedBroker {
  private static KafkaBroker broker;

  private SharedBroker() {}

  static synchronized KafkaBroker get() throws Exception {
    if (broker == null) {
      KafkaBroker b = KafkaBroker.start();
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    try {
                      b.close();
                    } catch (Exception e) {
                      // The JVM is exiting; the temporary directory may stay.
                    }
                  }));
      broker = b;
    }
    return broker;
  }
}
