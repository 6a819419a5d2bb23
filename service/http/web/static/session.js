/* The person at the keyboard: their player token, kept in this browser's localStorage, and
 * authenticated calls of the public JSON API made with it.
 *
 * The token is what a bot sends as `Authorization: Bearer ...`; the server shows it once, at sign
 * up. It stays in this browser until "Forget" removes it (it is never sent anywhere but the API
 * of this site). LL.session.call() retries 429 (after Retry-After), 5xx and network errors; a
 * move is posted with an Idempotency-Key, so a retried POST can never play twice.
 */
"use strict";

LL.session = (() => {
  const KEY = "llarena.player";

  /** {id, name, token} or null. */
  function get() {
    try {
      const p = JSON.parse(localStorage.getItem(KEY) || "null");
      return p && typeof p.token === "string" && p.token ? p : null;
    } catch (e) { return null; }
  }

  function save(p) { localStorage.setItem(KEY, JSON.stringify({ id: p.id, name: p.name, token: p.token })); }

  function forget() { localStorage.removeItem(KEY); }

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.message) || `HTTP ${status}`);
      this.status = status;
      this.code = (body && body.code) || "http_error";
      this.body = body;
    }
  }

  /** Call the API as the signed-in player. Resolves to {status, data, etag}; throws ApiError on
   *  a 4xx answer (its `code` is the API's stable error code). */
  async function call(method, path, { body = undefined, headers = {}, tries = 4, token = undefined, signal = undefined } = {}) {
    const me = get();
    const bearer = token !== undefined ? token : me && me.token;
    const h = { Accept: "application/json", ...headers };
    if (bearer) h.Authorization = `Bearer ${bearer}`;
    if (body !== undefined) h["Content-Type"] = "application/json";
    let last = null;
    for (let i = 0; i < tries; i++) {
      let resp;
      try {
        resp = await fetch(path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store", signal });
      } catch (e) {
        if (e.name === "AbortError") throw e;
        last = e;
        await LL.sleep(400 * (i + 1));
        continue;
      }
      if (resp.status === 429 || resp.status >= 500) {
        const wait = parseFloat(resp.headers.get("Retry-After") || "1");
        last = new ApiError(resp.status, null);
        await LL.sleep(Math.min(10, Math.max(0.2, wait)) * 1000);
        continue;
      }
      const text = resp.status === 204 || resp.status === 304 ? "" : await resp.text();
      let data = null;
      try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
      if (!resp.ok && resp.status !== 304) throw new ApiError(resp.status, data);
      return { status: resp.status, data, etag: resp.headers.get("ETag") };
    }
    throw last || new Error(`${method} ${path}: failed`);
  }

  /** A random key for Idempotency-Key. */
  function newKey() {
    const a = new Uint8Array(12);
    crypto.getRandomValues(a);
    return Array.from(a, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  return { get, save, forget, call, newKey, ApiError };
})();
