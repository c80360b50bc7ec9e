import { useState } from 'preact/hooks';
import { enc, get, post } from '../api.js';
import { usePoll } from '../hooks.js';
import { Badge, Confirm, ErrorBox } from '../components.jsx';
import { num } from '../format.js';
import { stateKind } from './Groups.jsx';

export function GroupDetail({ id }) {
  const { data, error, reload } = usePoll(() => get('/groups/' + enc(id)), 2000, [id]);
  const topics = data ? [...new Set(data.offsets.map((o) => o.topic))] : [];
  return (
    <div>
      <h2><a href="#/groups">Consumer groups</a> / <span data-testid="group-id">{id}</span></h2>
      <ErrorBox error={error} />
      {data && (
        <div class="cards">
          <div class="card stat"><div class="label">State</div><div class="value"><Badge kind={stateKind(data.state)}>{data.state}</Badge></div></div>
          <div class="card stat"><div class="label">Members</div><div class="value">{data.members.length}</div></div>
          <div class="card stat"><div class="label">Total lag</div><div class="value" data-testid="total-lag">{num(data.lag)}</div></div>
          <div class="card stat"><div class="label">Coordinator</div><div class="value">node {data.coordinator}</div></div>
          {data.partitionAssignor && <div class="card stat"><div class="label">Assignor</div><div class="value">{data.partitionAssignor}</div></div>}
        </div>
      )}
      {data && (
        <section>
          <h3>Members</h3>
          <table data-testid="members">
            <thead><tr><th>Client</th><th>Host</th><th>Member id</th><th>Partitions</th></tr></thead>
            <tbody>
              {data.members.map((m) => (
                <tr>
                  <td>{m.clientId}</td>
                  <td class="mono">{m.host}</td>
                  <td class="mono small">{m.memberId}</td>
                  <td>{m.assignment.map((a) => a.topic + '-' + a.partition).join(', ')}</td>
                </tr>
              ))}
              {data.members.length === 0 && <tr><td colSpan={4} class="muted">No active members.</td></tr>}
            </tbody>
          </table>
        </section>
      )}
      {data && (
        <section>
          <h3>Offsets and lag</h3>
          <table data-testid="offsets">
            <thead><tr><th>Topic</th><th class="num">Partition</th><th class="num">Committed</th><th class="num">End offset</th><th class="num">Lag</th><th>Consumer</th></tr></thead>
            <tbody>
              {data.offsets.map((o) => (
                <tr data-tp={o.topic + '-' + o.partition}>
                  <td>{o.topic}</td>
                  <td class="num">{o.partition}</td>
                  <td class="num">{num(o.committed)}</td>
                  <td class="num">{num(o.endOffset)}</td>
                  <td class="num">{num(o.lag)}</td>
                  <td class="small">{o.clientId || '–'}</td>
                </tr>
              ))}
              {data.offsets.length === 0 && <tr><td colSpan={6} class="muted">No committed offsets.</td></tr>}
            </tbody>
          </table>
        </section>
      )}
      {data && topics.length > 0 && <Reset id={id} topics={topics} members={data.members.length} onDone={reload} />}
    </div>
  );
}

function Reset({ id, topics, members, onDone }) {
  const [topic, setTopic] = useState(topics[0]);
  const [to, setTo] = useState('earliest');
  const [offset, setOffset] = useState('');
  const [when, setWhen] = useState('');
  const [confirming, setConfirming] = useState(false);
  const [done, setDone] = useState(null);
  const target = to === 'offset' ? 'offset ' + offset : to === 'timestamp' ? 'the first record at or after ' + when : 'the ' + to + ' offset';
  const body = () => {
    const b = { topic, to };
    if (to === 'offset') b.offset = offset;
    if (to === 'timestamp') b.timestamp = new Date(when + 'Z').getTime();
    return b;
  };
  return (
    <section>
      <h3>Reset offsets</h3>
      <form class="card form" data-testid="reset" onSubmit={(e) => { e.preventDefault(); setDone(null); setConfirming(true); }}>
        <label>Topic <select value={topic} onChange={(e) => setTopic(e.target.value)}>{topics.map((t) => <option>{t}</option>)}</select></label>
        <label>To <select name="to" value={to} onChange={(e) => setTo(e.target.value)}>
          <option value="earliest">earliest</option>
          <option value="latest">latest</option>
          <option value="offset">offset</option>
          <option value="timestamp">time</option>
        </select></label>
        {to === 'offset' && <label>Offset <input name="offset" type="number" min="0" required value={offset} onInput={(e) => setOffset(e.target.value)} /></label>}
        {to === 'timestamp' && <label>Time (UTC) <input type="datetime-local" step="1" required value={when} onInput={(e) => setWhen(e.target.value)} /></label>}
        <button type="submit" class="primary">Reset…</button>
        {members > 0 && <span class="muted small">The group has active members: stop them first, or the broker will refuse.</span>}
      </form>
      {done && <div class="notice">{done}</div>}
      {confirming && (
        <Confirm title="Reset consumer group offsets" confirmLabel="Reset offsets" danger
          onCancel={() => setConfirming(false)}
          onConfirm={async () => {
            const r = await post('/groups/' + enc(id) + '/reset', body());
            setConfirming(false);
            setDone('Committed: ' + r.offsets.map((o) => topic + '-' + o.partition + ' → ' + o.offset).join(', '));
            onDone();
          }}>
          <p>Move group <b>{id}</b> on every partition of <b>{topic}</b> to {target}?</p>
          <p class="muted small">Its consumers will start from there when they next join.</p>
        </Confirm>
      )}
    </section>
  );
}
