import HTTPTypes
import Hummingbird
import NIOCore

/// `badgepipe api --demo`: at `/demo`, a small app screen over this API, for a person to try it in a browser and
/// for the browser test — a bell with the live count (the user's `badge`, the number the icon shows), the
/// notification list (opening it marks what it shows seen), tap to read, mark all read. It signs in with a token
/// given in the address's fragment (`/demo#token=…`, never sent to the server) or pasted into its form, kept in the
/// tab's session storage; the page says it is for development.
///
/// It is the API's own client: every number it shows comes from `/v1/me/counts`, the stream and the list, and every
/// change it makes is a write of section 7.2. Its script and stylesheet are files of their own, so that its
/// Content-Security-Policy allows no inline code.
enum DemoPage {
    /// The security headers of every demo answer: only this origin's script, style and connections; no framing.
    static func headers(contentType: String) -> HTTPFields {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.cacheControl] = "no-store"
        headers[.contentSecurityPolicy] =
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
            + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return headers
    }

    static func response(_ text: String, contentType: String) -> Response {
        Response(
            status: .ok, headers: headers(contentType: contentType),
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// Adds `/demo`, `/demo/app.js` and `/demo/app.css`.
    static func addRoutes(to router: Router<BasicRequestContext>) {
        router.get("/demo") { _, _ in response(html, contentType: "text/html; charset=utf-8") }
        router.get("/demo/app.js") { _, _ in response(script, contentType: "text/javascript; charset=utf-8") }
        router.get("/demo/app.css") { _, _ in response(style, contentType: "text/css; charset=utf-8") }
    }

    static let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>BadgePipe demo app</title>
        <link rel="icon" href="data:,">
        <link rel="stylesheet" href="/demo/app.css">
        <script src="/demo/app.js" defer></script>
        </head>
        <body>
        <p class="development">For development: this page signs in with a development token
        (<code>badgepipe api token --user U</code>). Your app gets its token from your own backend.</p>
        <form id="sign-in" hidden>
          <label>Token <input id="token" name="token" autocomplete="off" spellcheck="false"></label>
          <button type="submit">Sign in</button>
        </form>
        <main id="app" hidden>
          <header>
            <h1>Demo app</h1>
            <span id="connection" data-state="connecting">connecting</span>
            <button id="bell" type="button" aria-label="Notifications" aria-expanded="false">
              <svg class="bell-icon" aria-hidden="true" width="28" height="28" viewBox="0 0 24 24">
                <path fill="currentColor" d="M12 22a2.5 2.5 0 0 0 2.45-2h-4.9A2.5 2.5 0 0 0 12 22zm7-6V11a7 7 0 0 0-5.5-6.84V3.5a1.5 1.5 0 0 0-3 0v.66A7 7 0 0 0 5 11v5l-2 2v1h18v-1z"/>
              </svg>
              <span id="bell-count" hidden></span>
            </button>
          </header>
          <p id="counts" class="counts"></p>
          <section id="inbox" hidden>
            <div class="inbox-head">
              <h2>Notifications</h2>
              <button id="read-all" type="button">Mark all as read</button>
            </div>
            <ul id="notifications"></ul>
            <button id="more" type="button" hidden>More</button>
            <p id="empty" hidden>Nothing yet.</p>
          </section>
          <p id="error" role="alert" hidden></p>
          <button id="sign-out" type="button">Sign out</button>
        </main>
        </body>
        </html>
        """

    static let style = """
        body { font: 15px/1.4 system-ui, sans-serif; margin: 0 auto; max-width: 36rem; padding: 1rem; color: #222; }
        .development { background: #fff4d6; border: 1px solid #e9c46a; padding: .5rem .75rem; border-radius: 6px; }
        header { display: flex; align-items: center; gap: .75rem; }
        header h1 { font-size: 1.3rem; margin: 0; flex: 1; }
        #connection { font-size: .8rem; color: #888; }
        #connection[data-state="live"] { color: #2a9d8f; }
        #bell { position: relative; font-size: 1.6rem; background: none; border: none; cursor: pointer; }
        #bell-count { position: absolute; top: -.2rem; right: -.4rem; background: #e63946; color: #fff;
          font-size: .75rem; font-weight: 600; border-radius: 1rem; padding: .05rem .4rem; min-width: 1rem; }
        .counts { color: #666; font-size: .85rem; }
        .inbox-head { display: flex; align-items: center; justify-content: space-between; }
        #notifications { list-style: none; padding: 0; margin: 0; }
        #notifications li { border-bottom: 1px solid #eee; }
        #notifications button { display: block; width: 100%; text-align: left; background: none; border: none;
          padding: .6rem .4rem; cursor: pointer; font: inherit; }
        #notifications li.unread button { font-weight: 600; background: #eef6ff; }
        #notifications .when { display: block; font-weight: 400; color: #888; font-size: .8rem; }
        #error { color: #b00020; }
        """

    static let script = """
        "use strict";
        // The demo app: everything it shows comes from the API (section 7 of the contract), nothing is counted here.
        const state = { token: null, counts: null, open: false, items: [], next: null, source: null };

        function $(id) { return document.getElementById(id); }

        // A request's Idempotency-Key: 16 random bytes in hex (crypto.randomUUID needs a secure context).
        function newKey() {
          return Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, "0"))
            .join("");
        }

        function showError(message) {
          const node = $("error");
          node.textContent = message;
          node.hidden = !message;
        }

        async function api(method, path, body) {
          const headers = { "Authorization": "Bearer " + state.token };
          const init = { method, headers };
          if (body !== undefined) {
            headers["Content-Type"] = "application/json";
            headers["Idempotency-Key"] = newKey();
            init.body = JSON.stringify(body);
          }
          const answer = await fetch(path, init);
          if (answer.status === 401) { signOut("the token was refused: sign in again"); throw new Error("401"); }
          const text = await answer.text();
          const json = text ? JSON.parse(text) : null;
          if (!answer.ok) { throw new Error((json && json.message) || ("HTTP " + answer.status)); }
          return json;
        }

        // The bell shows the badge: the number the app's icon shows, from the same count.
        function showCounts(counts) {
          if (state.counts && counts.badge_version < state.counts.badge_version) { return; }
          state.counts = counts;
          const bell = $("bell-count");
          const shown = counts.badge > 99 ? "99+" : String(counts.badge);
          // When the bell changed, for the browser test to compare with the push's arrival.
          if (bell.textContent !== shown || bell.hidden !== (counts.badge === 0)) {
            bell.dataset.shownAt = String(Date.now());
          }
          bell.textContent = shown;
          bell.hidden = counts.badge === 0;
          bell.dataset.version = String(counts.badge_version);
          $("counts").textContent = counts.unread_notifications + " unread, " + counts.unseen_notifications +
            " unseen, " + counts.unread_messages + " unread messages (version " + counts.badge_version + ")";
        }

        const verbs = {
          follow: "followed you", amen: "said amen to your post", comment: "commented on your post",
          mention: "mentioned you", message: "sent you a message",
        };

        function describe(item) {
          const who = (item.actor && (item.actor.name || item.actor.username || item.actor.id)) || "Someone";
          const line = item.title || (who + " " + (verbs[item.type] || item.type));
          return item.text ? line + ": " + item.text : line;
        }

        function render() {
          const list = $("notifications");
          list.replaceChildren(...state.items.map((item) => {
            const row = document.createElement("li");
            row.dataset.id = item.id;
            row.className = item.read ? "read" : "unread";
            const button = document.createElement("button");
            button.type = "button";
            button.textContent = describe(item);
            const when = document.createElement("span");
            when.className = "when";
            when.textContent = new Date(item.occurred_at).toLocaleString();
            button.append(when);
            button.addEventListener("click", () => tap(item));
            row.append(button);
            return row;
          }));
          $("more").hidden = !state.next;
          $("empty").hidden = state.items.length > 0;
        }

        async function loadPage(first) {
          const query = "?limit=20" + (first || !state.next ? "" : "&before=" + encodeURIComponent(state.next));
          const page = await api("GET", "/v1/me/notifications" + query);
          state.items = first ? page.notifications : state.items.concat(page.notifications);
          state.next = page.next;
          showCounts(page.counts);
          render();
          return page;
        }

        // Opening the list marks what it shows seen (up to the newest shown, so that later ones stay unseen).
        async function openInbox() {
          state.open = !state.open;
          $("inbox").hidden = !state.open;
          $("bell").setAttribute("aria-expanded", String(state.open));
          if (!state.open) { return; }
          try {
            const page = await loadPage(true);
            const unseen = page.notifications.some((item) => !item.seen);
            if (unseen) {
              await api("POST", "/v1/me/notifications/opened", { until: page.notifications[0].occurred_at });
            }
            showError("");
          } catch (error) { showError(String(error.message || error)); }
        }

        async function tap(item) {
          if (item.read) { return; }
          try {
            await api("POST", "/v1/me/notifications/read", { ids: [item.id] });
            item.read = true;
            item.seen = true;
            render();
            showError("");
          } catch (error) { showError(String(error.message || error)); }
        }

        async function readAll() {
          if (state.items.length === 0) { return; }
          try {
            await api("POST", "/v1/me/notifications/read-all", { until: state.items[0].occurred_at });
            for (const item of state.items) { item.read = true; item.seen = true; }
            render();
            showError("");
          } catch (error) { showError(String(error.message || error)); }
        }

        // The live count: EventSource reconnects by itself, sending Last-Event-ID (the last badge_version).
        function listen() {
          const source = new EventSource("/v1/me/stream?access_token=" + encodeURIComponent(state.token));
          state.source = source;
          source.addEventListener("open", () => { setConnection("live"); });
          source.addEventListener("error", () => { setConnection("connecting"); });
          source.addEventListener("counts", (event) => { showCounts(JSON.parse(event.data)); });
          source.addEventListener("notification", (event) => {
            const item = JSON.parse(event.data);
            if (state.open && !state.items.some((known) => known.id === item.id)) {
              state.items.unshift(item);
              render();
            }
          });
        }

        function setConnection(name) {
          const node = $("connection");
          node.dataset.state = name;
          node.textContent = name;
        }

        function signOut(message) {
          if (state.source) { state.source.close(); }
          sessionStorage.removeItem("badgepipe-demo-token");
          state.token = null;
          $("app").hidden = true;
          $("sign-in").hidden = false;
          showError(message || "");
          if (message) { $("sign-in").after($("error")); }
        }

        async function start(token) {
          state.token = token;
          sessionStorage.setItem("badgepipe-demo-token", token);
          $("sign-in").hidden = true;
          $("app").hidden = false;
          try {
            showCounts(await api("GET", "/v1/me/counts"));
            listen();
          } catch (error) { showError(String(error.message || error)); }
        }

        document.addEventListener("DOMContentLoaded", () => {
          $("bell").addEventListener("click", openInbox);
          $("read-all").addEventListener("click", readAll);
          $("more").addEventListener("click", () => loadPage(false).catch((error) => showError(String(error))));
          $("sign-out").addEventListener("click", () => signOut(""));
          $("sign-in").addEventListener("submit", (event) => {
            event.preventDefault();
            const token = $("token").value.trim();
            if (token) { start(token); }
          });
          // A token in the fragment (never sent to the server) signs in, and leaves the address.
          const fragment = new URLSearchParams(location.hash.slice(1));
          const given = fragment.get("token");
          if (given) { history.replaceState(null, "", location.pathname); }
          const token = given || sessionStorage.getItem("badgepipe-demo-token");
          if (token) { start(token); } else { $("sign-in").hidden = false; }
        });
        """
}
