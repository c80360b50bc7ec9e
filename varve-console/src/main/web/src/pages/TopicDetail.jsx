import { useState } from 'preact/hooks';
import { del, enc, get, put } from '../api.js';
import { usePoll } from '../hooks.js';
import { Badge, Confirm, ErrorBox } from '../components.jsx';
import { num } from '../format.js';

export function TopicDetail({ name }) {
  const { data, error, reload } = usePoll(() => get('/topics/' + enc(name)), 5000, [name]);
  const [deleting, setDeleting] = useState(false);
  const [change, setChange] = useState(null); // {name, from, to}
  const [editing, setEditing] = useState(null); // {name, value}
  const [showDefaults, setShowDefaults] = useState(false);
  const configs = data ? data.configs.filter((c) => showDefaults || !c.default) : [];
  return (
    <div>
      <div class="title-row">
        <h2><a href="#/topics">Topics</a> / <span data-testid="topic-name">{name}</span></h2>
        <div>
          <a class="button" href={'#/messages?topic=' + enc(name)}>Browse messages</a>{' '}
          {data && !data.internal && <button type="button" class="danger" onClick={() => setDeleting(true)} data-testid="delete-topic">Delete topic</button>}
        </div>
      </div>
      <ErrorBox error={error} />
      {data && (
        <section>
          <h3>Partitions</h3>
          <table data-testid="partitions">
            <thead><tr><th class="num">Partition</th><th class="num">Leader</th><th>Replicas</th><th>In sync</th><th class="num">Start offset</th><th class="num">End offset</th><th class="num">Records</th></tr></thead>
            <tbody>
              {data.partitions.map((p) => (
                <tr data-partition={p.partition}>
                  <td class="num">{p.partition}</td>
                  <td class="num">{p.leader >= 0 ? p.leader : <Badge kind="critical">none</Badge>}</td>
                  <td>{p.replicas.join(', ')}</td>
                  <td>{p.isr.join(', ')} {p.underReplicated && <Badge kind="degraded">under-replicated</Badge>}</td>
                  <td class="num">{num(p.startOffset)}</td>
                  <td class="num" data-testid="end-offset">{num(p.endOffset)}</td>
                  <td class="num">{p.startOffset === null || p.endOffset === null ? '–' : num(p.endOffset - p.startOffset)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
      {data && (
        <section>
          <div class="title-row">
            <h3>Configuration</h3>
            <label class="inline"><input type="checkbox" checked={showDefaults} onChange={(e) => setShowDefaults(e.target.checked)} /> show defaults</label>
          </div>
          <table data-testid="configs">
            <thead><tr><th>Name</th><th>Value</th><th>Source</th><th></th></tr></thead>
            <tbody>
              {configs.map((c) => (
                <tr data-config={c.name}>
                  <td class="mono">{c.name}</td>
                  <td class="mono">
                    {editing && editing.name === c.name
                      ? <input class="mono" value={editing.value} autoFocus data-testid="config-value"
                        onInput={(e) => setEditing({ ...editing, value: e.target.value })}
                        onKeyDown={(e) => e.key === 'Enter' && setChange({ name: c.name, from: c.value, to: editing.value })} />
                      : (c.sensitive ? '(hidden)' : c.value)}
                  </td>
                  <td class="muted small">{c.source}</td>
                  <td class="actions-cell">
                    {c.readOnly ? <span class="muted small">read-only</span>
                      : editing && editing.name === c.name
                        ? <>
                          <button type="button" class="primary" onClick={() => setChange({ name: c.name, from: c.value, to: editing.value })} data-testid="save-config">Save</button>{' '}
                          <button type="button" onClick={() => setEditing(null)}>Cancel</button>
                        </>
                        : <>
                          <button type="button" onClick={() => setEditing({ name: c.name, value: c.value || '' })} data-testid="edit-config">Edit</button>
                          {!c.default && c.source === 'DYNAMIC_TOPIC_CONFIG' && <>{' '}<button type="button" onClick={() => setChange({ name: c.name, from: c.value, to: null })}>Reset</button></>}
                        </>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {!showDefaults && configs.length === 0 && <p class="muted">All settings are the broker's defaults (tick "show defaults" to see and edit them).</p>}
        </section>
      )}
      {change && (
        <Confirm title="Change topic configuration" confirmLabel="Apply"
          onCancel={() => setChange(null)}
          onConfirm={async () => {
            await put('/topics/' + enc(name) + '/configs', { configs: { [change.name]: change.to } });
            setChange(null);
            setEditing(null);
            reload();
          }}>
          <p>Set <b class="mono">{change.name}</b> of topic <b>{name}</b></p>
          <p class="mono">{change.from ?? '(unset)'} → {change.to === null ? '(the default)' : change.to}</p>
          <p class="muted small">The brokers apply it at once; producers and consumers of this topic are affected.</p>
        </Confirm>
      )}
      {deleting && (
        <Confirm title="Delete topic" confirmLabel="Delete" danger
          onCancel={() => setDeleting(false)}
          onConfirm={async () => {
            await del('/topics/' + enc(name));
            location.hash = '#/topics';
          }}>
          <p>Delete topic <b>{name}</b> and all of its records? This cannot be undone.</p>
        </Confirm>
      )}
    </div>
  );
}
