package dev.relay.spring.autoconfigure;

import dev.relay.Claim;
import dev.relay.Handler;
import dev.relay.Outcome;
import dev.relay.jackson.JsonCodec;
import dev.relay.spring.RelayHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.context.annotation.Bean;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * Finds {@link RelayHandler} methods on beans as they are initialized. The runtime turns them into
 * handlers when every singleton exists.
 */
final class RelayHandlerMethods implements BeanPostProcessor {
  /** One annotated method of one bean. */
  record Found(String kind, String beanName, Object bean, Method method) {
    String where() {
      return "method "
          + method.getDeclaringClass().getName()
          + "."
          + method.getName()
          + " of bean '"
          + beanName
          + "'";
    }

    /** A handler that reads the payload as the method's first parameter type and calls it. */
    Handler handler(JsonCodec codec) {
      Class<?> type = method.getParameterTypes()[0];
      boolean withClaim = method.getParameterCount() == 2;
      return codec.handler(type, (message, claim) -> invoke(message, claim, withClaim));
    }

    private Outcome invoke(Object message, Claim claim, boolean withClaim) throws Exception {
      try {
        Object result =
            withClaim ? method.invoke(bean, message, claim) : method.invoke(bean, message);
        return (Outcome) result;
      } catch (InvocationTargetException e) {
        if (e.getCause() instanceof Exception cause) {
          throw cause;
        }
        throw e;
      }
    }
  }

  private final List<Found> found = new ArrayList<>();

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    Class<?> target = AopUtils.getTargetClass(bean);
    Map<Method, RelayHandler> methods =
        MethodIntrospector.selectMethods(
            target,
            (MethodIntrospector.MetadataLookup<RelayHandler>)
                m ->
                    // A @Bean method names the kind of the Handler bean it declares.
                    AnnotatedElementUtils.hasAnnotation(m, Bean.class)
                        ? null
                        : AnnotatedElementUtils.findMergedAnnotation(m, RelayHandler.class));
    for (Map.Entry<Method, RelayHandler> e : methods.entrySet()) {
      Method declared = e.getKey();
      check(declared, beanName);
      Method invocable = AopUtils.selectInvocableMethod(declared, bean.getClass());
      invocable.setAccessible(true);
      synchronized (found) {
        found.add(new Found(e.getValue().kind(), beanName, bean, invocable));
      }
    }
    return bean;
  }

  List<Found> found() {
    synchronized (found) {
      return List.copyOf(found);
    }
  }

  private static void check(Method m, String beanName) {
    Class<?>[] p = m.getParameterTypes();
    boolean shape =
        (p.length == 1 || (p.length == 2 && p[1] == Claim.class))
            && p[0] != Claim.class
            && Outcome.class.isAssignableFrom(m.getReturnType());
    if (!shape) {
      throw new IllegalStateException(
          "@RelayHandler method "
              + m.getDeclaringClass().getName()
              + "."
              + m.getName()
              + " of bean '"
              + beanName
              + "' must be Outcome name(T message, Claim claim) or Outcome name(T message)");
    }
  }
}
