import { useEffect, useRef, useState, useCallback } from 'preact/hooks';

/** The current hash route, split: "#/topics/a%20b" -> ["topics", "a b"]; and its query as an object. */
export function useRoute() {
  const read = () => {
    const h = location.hash.replace(/^#\/?/, '');
    const [path, q] = h.split('?');
    const segments = path.split('/').filter(Boolean).map(decodeURIComponent);
    const params = Object.fromEntries(new URLSearchParams(q || ''));
    return { segments, params };
  };
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

/**
 * Calls load() now and every intervalMs (when given) while mounted, and again when deps change.
 * Returns {data, error, loading, reload}; a failed refresh keeps the last data and shows the error.
 */
export function usePoll(load, intervalMs, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const seq = useRef(0);
  const run = useCallback(async () => {
    const mine = ++seq.current;
    try {
      const data = await load();
      if (mine === seq.current) setState({ data, error: null, loading: false });
    } catch (e) {
      if (mine === seq.current) setState((s) => ({ data: s.data, error: e, loading: false }));
    }
  }, deps);
  useEffect(() => {
    setState({ data: null, error: null, loading: true });
    run();
    if (!intervalMs) return () => { seq.current++; };
    const t = setInterval(run, intervalMs);
    return () => { clearInterval(t); seq.current++; };
  }, [run, intervalMs]);
  return { ...state, reload: run };
}
