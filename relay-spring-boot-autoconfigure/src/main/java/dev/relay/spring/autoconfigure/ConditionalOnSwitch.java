package dev.relay.spring.autoconfigure;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.Locale;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Matches when the boolean property {@link #value()} is {@code true} or unset; unlike
 * {@code @ConditionalOnBooleanProperty}, a value that is neither {@code true} nor {@code false}
 * (such as {@code maybe}) fails start-up naming the property instead of silently switching the
 * feature off.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
@Documented
@Conditional(ConditionalOnSwitch.OnSwitch.class)
@interface ConditionalOnSwitch {
  /** The property, such as {@code relay.maintenance.enabled}. */
  String value();

  /** Reads the switch. */
  final class OnSwitch extends SpringBootCondition {
    @Override
    public ConditionOutcome getMatchOutcome(
        ConditionContext context, AnnotatedTypeMetadata metadata) {
      String name =
          (String)
              metadata.getAnnotationAttributes(ConditionalOnSwitch.class.getName()).get("value");
      String value = context.getEnvironment().getProperty(name);
      String v = value == null ? "true" : value.strip().toLowerCase(Locale.ROOT);
      if (!v.equals("true") && !v.equals("false")) {
        throw new InvalidConfigurationPropertyValueException(name, value, "must be true or false");
      }
      return v.equals("true")
          ? ConditionOutcome.match(name + " is " + v)
          : ConditionOutcome.noMatch(name + " is false");
    }
  }
}
