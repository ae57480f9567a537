// The one way the console reaches the service: the public API with `x-api-key`, exactly as any client.
// The key lives in sessionStorage (this tab, until it closes) and only ever travels in that header.

const KEY = 'carebridge.console.apiKey';

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export const storedKey = () => sessionStorage.getItem(KEY);
export const storeKey = (key) => sessionStorage.setItem(KEY, key);
export const forgetKey = () => sessionStorage.removeItem(KEY);

/**
 * A URL the service handed out (upload, result CSV, renderings), fetched from this page's origin: the
 * service built it from its public URL, which may name another host than the one the browser reached.
 */
export function sameOrigin(url) {
  const parsed = new URL(url, location.href);
  return `${location.origin}${parsed.pathname}${parsed.search}`;
}

export class Api {
  /** `base`: where the API is mounted ('' at the root). */
  constructor(base) {
    this.base = base;
  }

  /**
   * One call; resolves the JSON answer (undefined for 204), rejects with an ApiError carrying the
   * problem's code. A 401 signs the console out (the key was rotated or removed).
   */
  async call(method, path, { query, body, headers } = {}) {
    const url = new URL(`${this.base}${path}`, location.origin);
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined && value !== '') url.searchParams.set(name, String(value));
    return this.fetchJson(url.toString(), { method, body, headers });
  }

  /** Fetches a service URL (same origin) with the key, JSON in and out. */
  async fetchJson(url, { method = 'GET', body, headers = {}, raw } = {}) {
    const key = storedKey();
    const init = { method, headers: { ...(key ? { 'x-api-key': key } : {}), ...headers }, credentials: 'omit', cache: 'no-store' };
    if (raw !== undefined) init.body = raw;
    else if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers['content-type'] = 'application/json';
    }
    let response;
    try {
      response = await fetch(url, init);
    } catch {
      throw new ApiError(0, 'NETWORK', 'The service did not answer');
    }
    if (response.status === 204) return undefined;
    const text = await response.text();
    let parsed;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!response.ok) {
      const error = new ApiError(response.status, parsed?.code ?? `HTTP_${response.status}`, parsed?.detail ?? parsed?.title ?? response.statusText);
      if (response.status === 401) window.dispatchEvent(new CustomEvent('console:unauthorized'));
      throw error;
    }
    return parsed === undefined ? text : parsed;
  }

  /** The text of a URL the service signed (result CSV, search bundle): the signature is its access, so no key goes with it. */
  async fetchText(url) {
    const response = await fetch(sameOrigin(url), { credentials: 'omit', cache: 'no-store' });
    if (!response.ok) throw new ApiError(response.status, `HTTP_${response.status}`, 'The file could not be fetched');
    return response.text();
  }
}
