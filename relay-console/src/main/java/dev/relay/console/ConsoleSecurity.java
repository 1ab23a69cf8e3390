package dev.relay.console;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.time.InstantSource;
import java.util.Collections;
import java.util.Enumeration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.springframework.http.HttpMethod;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.annotation.web.configurers.HeadersConfigurer;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.access.intercept.AuthorizationFilter;
import org.springframework.security.web.authentication.LoginUrlAuthenticationEntryPoint;
import org.springframework.security.web.authentication.SavedRequestAwareAuthenticationSuccessHandler;
import org.springframework.security.web.authentication.UsernamePasswordAuthenticationFilter;
import org.springframework.security.web.authentication.logout.SimpleUrlLogoutSuccessHandler;
import org.springframework.security.web.csrf.CsrfToken;
import org.springframework.security.web.savedrequest.DefaultSavedRequest;
import org.springframework.security.web.savedrequest.HttpSessionRequestCache;
import org.springframework.security.web.savedrequest.SavedRequest;

/** The console's own filter chain; only loaded when Spring Security is on the class path. */
final class ConsoleSecurity {
  /**
   * No inline script or style, nothing from elsewhere, never framed. The console's own script may
   * fetch its own pages again (connect-src 'self') to refresh their live parts.
   */
  static final String CSP =
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
          + " connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

  /**
   * Paths under the mount that are never a page to return to after sign-in: the sign-in page
   * itself, sign-out, the style sheet, the script and the icon (a page fetches the last three).
   */
  static final Set<String> NOT_PAGES =
      Set.of("/login", "/logout", "/console.css", "/console.js", "/favicon.svg");

  private ConsoleSecurity() {}

  /**
   * The chain: roles per method, form login guarded by the sign-in limits ({@link SignInGuard}),
   * sessions ended by {@link SessionLimits}, the CSP and no framing. A signed-out request goes to
   * the console's sign-in page whatever its method, and a refused one gets the console's 403 page
   * ({@link ConsoleAccessDenied}), both from within this chain: an error left to the servlet
   * container is rendered at {@code /error}, which is the application's, not the console's.
   */
  static SecurityFilterChain chain(HttpSecurity http, ConsoleProperties p, Console console)
      throws Exception {
    String m = p.mount();
    SignInGuard guard =
        new SignInGuard(console, SignInThrottle.of(p.getSignIn(), InstantSource.system()));
    String viewer = p.getViewerRole();
    String operator = p.getOperatorRole();
    ConsolePagesCache cache = new ConsolePagesCache(m);
    SavedRequestAwareAuthenticationSuccessHandler signedIn =
        new SavedRequestAwareAuthenticationSuccessHandler();
    signedIn.setRequestCache(cache);
    signedIn.setDefaultTargetUrl(m);
    LoginUrlAuthenticationEntryPoint signIn = new LoginUrlAuthenticationEntryPoint(m + "/login");
    SimpleUrlLogoutSuccessHandler signedOut = new SimpleUrlLogoutSuccessHandler();
    signedOut.setDefaultTargetUrl(m + "/login?logout");
    http.securityMatcher(m, m + "/**")
        .requestCache(r -> r.requestCache(cache))
        // Also the CSRF check's handler (CsrfConfigurer takes exceptionHandling's).
        .exceptionHandling(
            e ->
                e.authenticationEntryPoint(signIn)
                    .accessDeniedHandler(
                        new ConsoleAccessDenied(console, cache, signIn, signedOut)))
        .authorizeHttpRequests(
            a ->
                a.requestMatchers(
                        HttpMethod.GET,
                        m + "/login",
                        m + "/console.css",
                        m + "/console.js",
                        m + "/favicon.svg")
                    .permitAll()
                    .requestMatchers(HttpMethod.GET, m, m + "/**")
                    .hasAnyRole(viewer, operator)
                    .anyRequest()
                    .hasRole(operator))
        .formLogin(
            f ->
                f.loginPage(m + "/login")
                    .loginProcessingUrl(m + "/login")
                    .successHandler(guard.successHandler(signedIn))
                    .failureHandler(guard.failureHandler())
                    .permitAll())
        .addFilterBefore(guard, UsernamePasswordAuthenticationFilter.class)
        .addFilterBefore(
            new SessionLimits(m, p.getSession(), InstantSource.system()), AuthorizationFilter.class)
        .logout(l -> l.logoutUrl(m + "/logout").logoutSuccessHandler(signedOut).permitAll())
        .headers(
            h ->
                h.contentSecurityPolicy(c -> c.policyDirectives(CSP))
                    .frameOptions(HeadersConfigurer.FrameOptionsConfig::deny));
    return http.build();
  }

  /**
   * Whether a request is a console page to return to after sign-in: a GET under the mount that is
   * not the sign-in page, the style sheet or the icon, nor a download.
   *
   * @param path the request URI without the context path
   */
  static boolean pageToReturnTo(String mount, String method, String path) {
    if (!"GET".equals(method) || !Console.under(mount, path)) {
      return false;
    }
    String rest = path.substring(mount.length());
    return !NOT_PAGES.contains(rest) && !rest.startsWith("/item/download");
  }

  /**
   * The request to return to after sign-in, kept in the session (shared with the application): it
   * saves only console pages, and returns only a console page, whatever else saved one. So neither
   * the browser's own {@code /favicon.ico}, nor an {@code /error} dispatch, nor a page of the
   * application is where the console's sign-in lands; without a console page to return to it lands
   * on the overview. A form sent signed out is not sent again after sign-in (it would act without
   * being seen); its page is saved instead ({@link ConsoleForms#page}), to be opened again.
   */
  static final class ConsolePagesCache extends HttpSessionRequestCache {
    private final String mount;

    ConsolePagesCache(String mount) {
      this.mount = mount;
      setRequestMatcher(r -> pageToReturnTo(mount, r.getMethod(), path(r)));
    }

    @Override
    public void saveRequest(HttpServletRequest request, HttpServletResponse response) {
      Link form =
          "POST".equals(request.getMethod())
              ? ConsoleForms.page(mount, path(request), request)
              : null;
      super.saveRequest(form == null ? request : new FormPage(request, form.href()), response);
    }

    @Override
    public SavedRequest getRequest(HttpServletRequest request, HttpServletResponse response) {
      SavedRequest saved = super.getRequest(request, response);
      return saved instanceof DefaultSavedRequest d
              && pageToReturnTo(
                  mount, d.getMethod(), d.getRequestURI().substring(d.getContextPath().length()))
          ? saved
          : null;
    }

    private static String path(HttpServletRequest r) {
      return r.getRequestURI().substring(r.getContextPath().length());
    }
  }

  /**
   * The page of a form sent signed out, as the browser asks for it: a GET of the page's address
   * with the browser's own headers, less those of the form's body. Saved in the form's place.
   */
  private static final class FormPage extends HttpServletRequestWrapper {
    private static final Set<String> BODY_HEADERS = Set.of("content-type", "content-length");

    private final String path;
    private final String query;

    /**
     * @param href the page's path within the application, and its query if any
     */
    FormPage(HttpServletRequest form, String href) {
      super(form);
      int q = href.indexOf('?');
      this.path = q < 0 ? href : href.substring(0, q);
      this.query = q < 0 ? null : href.substring(q + 1);
    }

    @Override
    public String getMethod() {
      return "GET";
    }

    @Override
    public String getRequestURI() {
      return getContextPath() + path;
    }

    @Override
    public StringBuffer getRequestURL() {
      StringBuffer url = super.getRequestURL();
      return url.replace(
          url.length() - super.getRequestURI().length(), url.length(), getRequestURI());
    }

    @Override
    public String getServletPath() {
      return path;
    }

    @Override
    public String getPathInfo() {
      return null;
    }

    @Override
    public String getQueryString() {
      return query;
    }

    /** None of the form's fields: the page's own are in its query when it is opened. */
    @Override
    public Map<String, String[]> getParameterMap() {
      return Map.of();
    }

    @Override
    public Enumeration<String> getHeaderNames() {
      return Collections.enumeration(
          Collections.list(super.getHeaderNames()).stream()
              .filter(h -> !BODY_HEADERS.contains(h.toLowerCase(Locale.ROOT)))
              .toList());
    }
  }

  /** The CSRF form field of the request, or null. */
  static String[] csrfField(HttpServletRequest request) {
    if (request.getAttribute(CsrfToken.class.getName()) instanceof CsrfToken t) {
      return new String[] {t.getParameterName(), t.getToken()};
    }
    return null;
  }
}
