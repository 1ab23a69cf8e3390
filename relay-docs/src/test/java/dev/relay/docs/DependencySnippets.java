package dev.relay.docs;

import dev.relay.Outbox;
import dev.relay.Work;
import dev.relay.admin.Admin;
import dev.relay.admin.Dependency;
import dev.relay.admin.RedriveRequest;
import java.sql.Connection;
import java.util.List;

/** The code of docs/dependencies.md. */
final class DependencySnippets {
  private DependencySnippets() {}

  static void chain(Connection c, Outbox outbox, String orderJson) {
    // docs:begin dependencies-chain
    outbox.enqueueAll(c, List.of(
        Work.of("order-103-charge", "charge", orderJson),
        Work.of("order-103-ship", "ship", orderJson)
            .dependsOn("order-103-charge"),                       // after the charge is done
        Work.of("order-103-invoice", "invoice", orderJson)
            .dependsOn("order-103-charge", "order-103-ship")));   // after both
    // docs:end
  }

  static void blocked(Admin admin) {
    // docs:begin dependencies-blocked
    admin.blockedBy("order-103-invoice").ifPresent(d ->
        System.out.println(d.workId() + ": " + d.blockedReason()));  // order-103-charge: dependency_failed
    for (Dependency d : admin.dependencies("order-103-invoice")) {
      System.out.println(d.workId() + " " + d.state());              // order-103-charge failed, ...
    }
    // docs:end
  }

  static void act(Admin admin) {
    // docs:begin dependencies-act
    // release the dependents: the charge runs again, and once done, ship and invoice follow
    admin.redrive("order-103-charge", RedriveRequest.of("mina@ops", "card provider back, INC-7"));
    // or give up on a dependent
    admin.cancel("order-103-invoice", "mina@ops", "order withdrawn");
    // or give up on the charge and everything that waits for it
    admin.cancelWithDependents("order-103-charge", "mina@ops", "order withdrawn");
    // docs:end
  }
}
