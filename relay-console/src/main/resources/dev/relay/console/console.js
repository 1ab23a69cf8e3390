// The Relay console's only script, served from the console itself (the CSP allows no other).
// A page whose <body> carries data-refresh="MILLISECONDS" fetches itself again that often and
// swaps in the fresh copy of each element marked data-live (by id): counts, lists, an item's
// facts and history update without a reload, while forms outside those parts keep what the user
// typed. The fresh copy is the server's own escaped page, parsed inertly (DOMParser runs no
// script). Nothing is fetched while the tab is hidden; a sign-in redirect or an error stops
// nothing but that round, and the line in #live-status says so.
(function () {
  'use strict';
  var every = parseInt(document.body.getAttribute('data-refresh') || '0', 10);
  var status = document.getElementById('live-status');
  if (!every || document.querySelectorAll('[data-live][id]').length === 0) {
    // A page with nothing live (sign-in, a form) says nothing about updating.
    if (status) {
      status.remove();
    }
    return;
  }
  var busy = false;

  function say(text) {
    if (status) {
      status.textContent = text;
    }
  }

  function swap(html) {
    var fresh = new DOMParser().parseFromString(html, 'text/html');
    document.querySelectorAll('[data-live][id]').forEach(function (part) {
      var next = fresh.getElementById(part.id);
      if (next && next.innerHTML !== part.innerHTML) {
        part.replaceWith(document.importNode(next, true));
      }
    });
    say('Live: updated at ' + new Date().toLocaleTimeString());
  }

  function refresh() {
    if (busy || document.hidden) {
      return;
    }
    busy = true;
    // X-Relay-Live: this request is the page's, not the user's; it does not keep the session alive.
    fetch(window.location.href, {credentials: 'same-origin', cache: 'no-store', redirect: 'manual',
      headers: {'X-Relay-Live': '1'}})
      .then(function (response) {
        if (response.type === 'opaqueredirect') {
          throw new Error('signed out');
        }
        if (!response.ok) {
          throw new Error('the console answered ' + response.status);
        }
        return response.text();
      })
      .then(swap)
      .catch(function (e) {
        say('Live: not updated (' + e.message + ')');
      })
      .finally(function () {
        busy = false;
      });
  }

  window.setInterval(refresh, every);
})();
