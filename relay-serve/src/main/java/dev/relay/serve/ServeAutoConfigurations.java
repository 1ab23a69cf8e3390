package dev.relay.serve;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;

/**
 * The auto-configurations {@code relay serve} uses, and only those: the list is {@code
 * META-INF/spring/dev.relay.serve.ServeAutoConfigurations.imports}, read by {@link
 * ImportAutoConfiguration} as Boot's test slices read theirs. Nothing else on the class path is
 * considered (no {@code @EnableAutoConfiguration}), so start-up evaluates no condition and loads no
 * class for a feature serve does not have (JDBC templates, transactions, task executors, disk-space
 * health, Tomcat and logging meters ...). A configuration the list leaves out is not read even when
 * its properties are set; docs/operations.md says which Boot features serve has.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@ImportAutoConfiguration
@interface ServeAutoConfigurations {}
