// The broker's console API (/api/...): JSON in and out; errors carry {"error": "..."}.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function call(method, path, body) {
  const init = { method, headers: {} };
  if (method !== 'GET') {
    // The broker refuses writes without this header: pages of other origins cannot send it.
    init.headers['X-Varve-Console'] = '1';
    init.headers['Content-Type'] = 'application/json';
    if (body !== undefined) init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch('/api' + path, init);
  } catch (e) {
    throw new ApiError(0, 'the broker does not answer (' + e.message + ')');
  }
  let data = null;
  try {
    data = await res.json();
  } catch (e) {
    throw new ApiError(res.status, 'HTTP ' + res.status + ' without a JSON answer');
  }
  if (!res.ok) throw new ApiError(res.status, (data && data.error) || 'HTTP ' + res.status);
  return data;
}

export const enc = encodeURIComponent;
export const get = (path) => call('GET', path);
export const post = (path, body) => call('POST', path, body);
export const put = (path, body) => call('PUT', path, body);
export const del = (path) => call('DELETE', path);

export function query(params) {
  const parts = [];
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') parts.push(enc(k) + '=' + enc(v));
  }
  return parts.length ? '?' + parts.join('&') : '';
}
