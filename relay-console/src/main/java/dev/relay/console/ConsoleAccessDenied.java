package dev.relay.console;

import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.security.access.AccessDeniedException;
import org.springframework.security.authentication.AuthenticationTrustResolver;
import org.springframework.security.authentication.AuthenticationTrustResolverImpl;
import org.springframework.security.authentication.InsufficientAuthenticationException;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.context.SecurityContextHolder;
import org.springframework.security.web.AuthenticationEntryPoint;
import org.springframework.security.web.access.AccessDeniedHandler;
import org.springframework.security.web.authentication.logout.LogoutSuccessHandler;
import org.springframework.security.web.csrf.CsrfException;
import org.springframework.security.web.csrf.CsrfToken;
import org.springframework.security.web.savedrequest.RequestCache;
import org.springframework.security.web.servletapi.SecurityContextHolderAwareRequestWrapper;

/**
 * What the console's filter chain answers when Spring Security refuses a request under the console
 * (the application's own paths keep the application's answer): the console's own 403 page, in its
 * layout and escaped like its 400 page, saying why and that nothing changed.
 *
 * <ul>
 *   <li>A form without a valid CSRF token ({@link CsrfException}): it was stale, opened in a
 *       session that has since ended (expired, signed out in another tab, or the server restarted),
 *       or it carried no token at all. The page links to the page that shows the form ({@link
 *       ConsoleForms#page}), or the overview, to open it again with a fresh form.
 *   <li>A signed-in user without the role ({@code AuthorizationFilter}, through Spring's {@code
 *       ExceptionTranslationFilter}): an action needs the operator role, a page the viewer or
 *       operator role; the page names the role.
 *   <li>A sign-out form refused by the CSRF check while nobody is signed in (its session expired,
 *       or the server restarted, since the page was opened) ends where a sign-out does, at the
 *       signed-out sign-in page, without an error: what it asked for has already happened. It
 *       changes nothing; every other refused form is answered as below.
 *   <li>A signed-out visitor's form carrying no token at all is sent to sign-in, as a signed-out
 *       GET is (and as a signed-out form with a valid token already was). Spring's CSRF check runs
 *       before sign-in is looked at, and its own handler answers with a 403 that the servlet
 *       container renders at {@code /error}, outside the console's chain: there the application's
 *       security sent the visitor to the application's sign-in page instead.
 * </ul>
 *
 * <p>It refuses exactly what Spring Security refused, with the same status: it only chooses the
 * words (or, for a sign-out already done, the signed-out page instead of the 403). A stale form
 * from a signed-out browser is shown the 403 page rather than sent to sign-in, so the person learns
 * that what they pressed did not happen.
 */
final class ConsoleAccessDenied implements AccessDeniedHandler {
  private static final AuthenticationTrustResolver TRUST = new AuthenticationTrustResolverImpl();

  private final Console console;
  private final RequestCache returnTo;
  private final AuthenticationEntryPoint signIn;
  private final LogoutSuccessHandler signedOut;

  /**
   * @param returnTo where the page to return to after signing in is kept
   * @param signIn the console's sign-in page
   * @param signedOut what a successful sign-out answers (the signed-out sign-in page)
   */
  ConsoleAccessDenied(
      Console console,
      RequestCache returnTo,
      AuthenticationEntryPoint signIn,
      LogoutSuccessHandler signedOut) {
    this.console = console;
    this.returnTo = returnTo;
    this.signIn = signIn;
    this.signedOut = signedOut;
  }

  @Override
  public void handle(
      HttpServletRequest request, HttpServletResponse response, AccessDeniedException denied)
      throws IOException, ServletException {
    if (denied instanceof CsrfException && signOut(request) && !signedIn()) {
      // Nobody to sign out: answered as the sign-out that has already happened, touching nothing.
      // CSRF guards sign-out so that no other site can end a session; here there is none to end.
      signedOut.onLogoutSuccess(request, response, null);
      return;
    }
    if (denied instanceof CsrfException && !carriesToken(request) && !signedIn()) {
      // What ExceptionTranslationFilter does for a request it refuses to a signed-out visitor.
      returnTo.saveRequest(request, response);
      signIn.commence(
          request, response, new InsufficientAuthenticationException("signed out", denied));
      return;
    }
    // The CSRF check runs before Spring Security presents the signed-in user to the request: so
    // that the page's header shows them, as every page's does.
    HttpServletRequest asUser =
        new SecurityContextHolderAwareRequestWrapper(request, TRUST, "ROLE_");
    Console.send(
        denied instanceof CsrfException ? staleForm(asUser) : roleNeeded(asUser), response);
  }

  private ResponseEntity<String> staleForm(HttpServletRequest request) {
    String message =
        (carriesToken(request)
                ? "This form was stale: it came from a page opened in an earlier session, which"
                    + " has since ended (it expired, was signed out in another tab, or the server"
                    + " restarted)."
                : "This form carried no security token, so the console cannot tell that it came"
                    + " from one of its own pages (another site or a script may have sent it).")
            + " Nothing changed. Open the page again, which gives its form a fresh token, and"
            + " try again.";
    return page(request, "Form refused; nothing changed", message, back(request));
  }

  private ResponseEntity<String> roleNeeded(HttpServletRequest request) {
    ConsoleProperties p = console.properties;
    String user = request.getUserPrincipal() == null ? "" : request.getUserPrincipal().getName();
    String viewer = "the viewer role (" + p.getViewerRole() + ")";
    String operator = "the operator role (" + p.getOperatorRole() + ")";
    String you = "You are signed in as " + ConsoleErrors.shown(user);
    String method = request.getMethod();
    if ("GET".equals(method) || "HEAD".equals(method)) {
      return page(
          request,
          ConsoleErrors.badRequestTitle(request),
          "The console's pages need " + viewer + " or " + operator + ". " + you + ", with neither.",
          null);
    }
    return page(
        request,
        "Operator role needed; nothing changed",
        method
            + " "
            + ConsoleErrors.shown(Console.path(request))
            + " is an action, and actions need "
            + operator
            + ". "
            + you
            + (request.isUserInRole(p.getViewerRole()) ? ", with " + viewer : ", with neither role")
            + ". Nothing changed.",
        back(request));
  }

  /** The page that shows the refused form, or the overview. */
  private Link back(HttpServletRequest request) {
    Link form = ConsoleForms.page(console.mount, Console.path(request), request);
    return form != null ? form : new Link("Go to the overview", console.mount);
  }

  private ResponseEntity<String> page(
      HttpServletRequest request, String title, String message, Link next) {
    return console.page(
        request,
        "problem",
        title,
        next == null ? Map.of("message", message) : Map.of("message", message, "next", next),
        HttpStatus.FORBIDDEN);
  }

  /** Whether the request is the Sign out button's form. */
  private boolean signOut(HttpServletRequest request) {
    return "POST".equals(request.getMethod())
        && Console.path(request).equals(console.mount + "/logout");
  }

  /** Whether the request carried a CSRF token at all, in the form or in the header. */
  private static boolean carriesToken(HttpServletRequest request) {
    return request.getAttribute(CsrfToken.class.getName()) instanceof CsrfToken t
        && (request.getHeader(t.getHeaderName()) != null
            || request.getParameter(t.getParameterName()) != null);
  }

  private static boolean signedIn() {
    Authentication user = SecurityContextHolder.getContext().getAuthentication();
    return user != null && user.isAuthenticated() && !TRUST.isAnonymous(user);
  }
}
