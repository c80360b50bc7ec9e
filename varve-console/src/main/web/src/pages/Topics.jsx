import { useState } from 'preact/hooks';
import { enc, get, post } from '../api.js';
import { usePoll } from '../hooks.js';
import { Badge, ErrorBox } from '../components.jsx';
import { bytes } from '../format.js';

export function Topics() {
  const { data, error, reload } = usePoll(() => get('/topics'), 10000, []);
  const [showInternal, setShowInternal] = useState(false);
  const [creating, setCreating] = useState(false);
  const topics = data ? data.topics.filter((t) => showInternal || !t.internal) : [];
  return (
    <div>
      <div class="title-row">
        <h2>Topics</h2>
        <button type="button" class="primary" onClick={() => setCreating(!creating)} data-testid="new-topic">
          {creating ? 'Close' : 'Create topic'}
        </button>
      </div>
      {creating && <CreateTopic onCreated={(name) => { setCreating(false); reload(); location.hash = '#/topics/' + enc(name); }} />}
      <ErrorBox error={error} />
      <label class="inline"><input type="checkbox" checked={showInternal} onChange={(e) => setShowInternal(e.target.checked)} /> show internal topics</label>
      <table data-testid="topics">
        <thead><tr><th>Name</th><th class="num">Partitions</th><th class="num">Replication</th><th>Replicas</th><th class="num">Size</th></tr></thead>
        <tbody>
          {topics.map((t) => (
            <tr data-topic={t.name}>
              <td><a href={'#/topics/' + enc(t.name)}>{t.name}</a>{t.internal && <span class="muted small"> internal</span>}</td>
              <td class="num">{t.partitions}</td>
              <td class="num">{t.replicationFactor}</td>
              <td>
                {t.offline > 0 ? <Badge kind="critical">{t.offline} offline</Badge>
                  : t.underReplicated > 0 ? <Badge kind="degraded">{t.underReplicated} under-replicated</Badge>
                    : <Badge kind="healthy">in sync</Badge>}
              </td>
              <td class="num">{bytes(t.sizeBytes)}</td>
            </tr>
          ))}
          {data && topics.length === 0 && <tr><td colSpan={5} class="muted">No topics yet.</td></tr>}
        </tbody>
      </table>
    </div>
  );
}

function CreateTopic({ onCreated }) {
  const [name, setName] = useState('');
  const [partitions, setPartitions] = useState('');
  const [rf, setRf] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await post('/topics', { name: name.trim(), partitions: partitions || null, replicationFactor: rf || null });
      onCreated(name.trim());
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card form" onSubmit={submit} data-testid="create-topic">
      <label>Name <input name="name" value={name} onInput={(e) => setName(e.target.value)} required autoFocus /></label>
      <label>Partitions <input name="partitions" type="number" min="1" placeholder="broker default" value={partitions} onInput={(e) => setPartitions(e.target.value)} /></label>
      <label>Replication factor <input name="replicationFactor" type="number" min="1" placeholder="broker default" value={rf} onInput={(e) => setRf(e.target.value)} /></label>
      <button type="submit" class="primary" disabled={busy || !name.trim()}>{busy ? 'Creating…' : 'Create'}</button>
      <ErrorBox error={error} />
    </form>
  );
}
