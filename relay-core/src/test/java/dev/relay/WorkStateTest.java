package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class WorkStateTest {
  @Test
  void everyStateRoundTripsThroughItsStoredValue() {
    for (WorkState s : WorkState.values()) {
      assertThat(WorkState.fromSql(s.sql())).isSameAs(s);
    }
    assertThat(Arrays.stream(WorkState.values()).filter(WorkState::isFinished))
        .containsExactly(WorkState.DONE, WorkState.FAILED, WorkState.CANCELLED);
  }

  @Test
  void anUnknownValueIsRefusedByName() {
    assertThatThrownBy(() -> WorkState.fromSql("paused"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'paused' is not a work state");
  }

  @Test
  void theEnumAndTheTablesCheckConstraintNameTheSameStates(TestDatabase db) {
    List<Map<String, Object>> rows =
        Rows.query(
            db.dataSource(),
            db.schema(),
            "SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint"
                + " WHERE conrelid = '{schema}.outbox'::regclass AND conname = 'outbox_state_check'");
    String def = (String) rows.get(0).get("def");
    for (WorkState s : WorkState.values()) {
      assertThat(def).contains("'" + s.sql() + "'");
    }
    assertThat(def.split("'", -1).length / 2).isEqualTo(WorkState.values().length);
  }
}
