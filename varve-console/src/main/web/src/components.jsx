import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export function ErrorBox({ error }) {
  if (!error) return null;
  return <div class="error" role="alert">{error.message || String(error)}</div>;
}

export function Badge({ kind, children }) {
  return <span class={'badge ' + kind}>{children}</span>;
}

/**
 * A confirmation dialog: what will happen, and a button that does it. onConfirm may return a promise;
 * its error is shown in the dialog, which stays open.
 */
export function Confirm({ title, children, confirmLabel, danger, onConfirm, onCancel }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const ok = async () => {
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  useEffect(() => {
    const esc = (e) => e.key === 'Escape' && !busy && onCancel();
    addEventListener('keydown', esc);
    return () => removeEventListener('keydown', esc);
  }, [busy]);
  return (
    <div class="overlay" onClick={(e) => e.target === e.currentTarget && !busy && onCancel()}>
      <div class="dialog" role="dialog" aria-modal="true" aria-label={title}>
        <h3>{title}</h3>
        <div class="dialog-body">{children}</div>
        <ErrorBox error={error} />
        <div class="actions">
          <button type="button" onClick={onCancel} disabled={busy}>Cancel</button>
          <button type="button" class={danger ? 'danger' : 'primary'} onClick={ok} disabled={busy} data-testid="confirm">
            {busy ? 'Working…' : confirmLabel}
          </button>
        </div>
      </div>
    </div>
  );
}

/** A uPlot time chart: data is [[times in s], [series 1], ...]; series are {label, stroke}. */
export function Chart({ title, series, data, unit }) {
  const el = useRef(null);
  const plot = useRef(null);
  useEffect(() => {
    const node = el.current; // the ref is cleared before this effect's cleanup runs
    const width = Math.max(260, node.clientWidth);
    const fmt = (u, v) => (v === null || v === undefined ? '–' : v.toFixed(v < 10 ? 2 : 0) + (unit ? ' ' + unit : ''));
    plot.current = new uPlot({
      width,
      height: 180,
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
      scales: { y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [{}, { size: 60, values: (u, vals) => vals.map((v) => shortNumber(v)) }],
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.stroke, width: 2, value: fmt }))],
    }, data, node);
    const ro = new ResizeObserver(() => plot.current && plot.current.setSize({ width: Math.max(260, node.clientWidth), height: 180 }));
    ro.observe(node);
    return () => { ro.disconnect(); plot.current.destroy(); plot.current = null; };
  }, []);
  useEffect(() => { if (plot.current) plot.current.setData(data); }, [data]);
  return (
    <div class="chart card">
      <h3>{title}</h3>
      <div ref={el} />
    </div>
  );
}

function shortNumber(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toFixed(1) + 'G';
  if (a >= 1e6) return (v / 1e6).toFixed(1) + 'M';
  if (a >= 1e3) return (v / 1e3).toFixed(1) + 'k';
  return String(Math.round(v * 100) / 100);
}
