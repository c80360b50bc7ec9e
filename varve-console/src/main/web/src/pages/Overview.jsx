import { useEffect, useState } from 'preact/hooks';
import { get } from '../api.js';
import { usePoll } from '../hooks.js';
import { Badge, Chart, ErrorBox } from '../components.jsx';
import { bytes } from '../format.js';

const WINDOW = 150; // samples kept: 5 minutes at one every 2 s
// Kept across page changes: the charts go on where they were.
const samples = [];
const listeners = new Set();

async function sample() {
  const m = await get('/metrics');
  samples.push(m);
  if (samples.length > WINDOW + 1) samples.shift();
  listeners.forEach((l) => l());
}

/** Rates from two readings of a counter; a counter that went down (the broker restarted) gives no point. */
function series() {
  const t = [], msgs = [], bin = [], bout = [], p99p = [], p99f = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1], b = samples[i];
    const dt = (b.time - a.time) / 1000;
    const rate = (k) => (dt > 0 && b[k] >= a[k] ? (b[k] - a[k]) / dt : null);
    t.push(b.time / 1000);
    msgs.push(rate('messagesIn'));
    bin.push(rate('bytesIn'));
    bout.push(rate('bytesOut'));
    p99p.push(b.produceP99Ms);
    p99f.push(b.fetchP99Ms);
  }
  return { t, msgs, bin, bout, p99p, p99f };
}

// Sampled from the first page load on, whatever page is shown: the charts have history when opened.
let timer = null;
export function startSampling() {
  if (timer === null) {
    sample().catch(() => {});
    timer = setInterval(() => sample().catch(() => {}), 2000);
  }
}

function useMetrics() {
  const [, setTick] = useState(0);
  useEffect(() => {
    const l = () => setTick((x) => x + 1);
    listeners.add(l);
    startSampling();
    return () => listeners.delete(l);
  }, []);
  return series();
}

export function Overview() {
  const { data, error } = usePoll(() => get('/overview'), 2000, []);
  const s = useMetrics();
  const last = samples.length ? samples[samples.length - 1] : null;
  return (
    <div>
      <h2>Overview</h2>
      <ErrorBox error={error} />
      {data && (
        <div class="cards">
          <div class="card stat">
            <div class="label">Health</div>
            <div class="value" data-testid="health"><Badge kind={data.health.status}>{data.health.status}</Badge></div>
            {data.health.problems.length > 0 && <ul class="problems">{data.health.problems.map((p) => <li>{p}</li>)}</ul>}
          </div>
          <div class="card stat">
            <div class="label">Cluster</div>
            <div class="value mono small">{data.clusterId}</div>
          </div>
          <div class="card stat">
            <div class="label">Controller</div>
            <div class="value" data-testid="controller">{data.controllerId >= 0 ? 'node ' + data.controllerId : 'none'}</div>
          </div>
          <div class="card stat">
            <div class="label">Brokers online</div>
            <div class="value">{data.brokers.filter((b) => !b.fenced).length} / {data.brokers.length}</div>
          </div>
          <div class="card stat">
            <div class="label">Topics / partitions</div>
            <div class="value">{data.topicCount} / {data.partitionCount}</div>
          </div>
          <div class="card stat">
            <div class="label">Under-replicated / offline</div>
            <div class="value">{data.health.underReplicatedPartitions} / {data.health.offlinePartitions}</div>
          </div>
        </div>
      )}
      {data && (
        <section>
          <h3>Brokers</h3>
          <table data-testid="brokers">
            <thead><tr><th>Node</th><th>Address</th><th>Rack</th><th>Status</th><th></th></tr></thead>
            <tbody>
              {data.brokers.map((b) => (
                <tr data-broker={b.id} class={b.fenced ? 'dim' : ''}>
                  <td>{b.id}</td>
                  <td class="mono">{b.host}:{b.port}</td>
                  <td>{b.rack || '–'}</td>
                  <td><Badge kind={b.fenced ? 'critical' : 'healthy'}>{b.fenced ? 'offline (fenced)' : 'online'}</Badge></td>
                  <td class="muted">{[b.controller && 'controller', b.id === data.nodeId && 'this console'].filter(Boolean).join(', ')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
      <section>
        <h3>Throughput and latency <span class="muted small">(node {last ? last.nodeId : '…'}, this console's broker; every 2 s)</span></h3>
        <div class="charts">
          <Chart title="Messages in /s" data={[s.t, s.msgs]} series={[{ label: 'messages in', stroke: '#2563eb' }]} />
          <Chart title="Bytes /s" data={[s.t, s.bin, s.bout]}
            series={[{ label: 'in', stroke: '#059669' }, { label: 'out', stroke: '#d97706' }]} />
          <Chart title="Request time p99 (ms)" data={[s.t, s.p99p, s.p99f]} unit="ms"
            series={[{ label: 'Produce', stroke: '#7c3aed' }, { label: 'Fetch', stroke: '#db2777' }]} />
        </div>
        {last && <p class="muted small">Totals since start: {last.messagesIn.toLocaleString('en-US')} messages, {bytes(last.bytesIn)} in, {bytes(last.bytesOut)} out.</p>}
      </section>
    </div>
  );
}
