import { enc, get } from '../api.js';
import { usePoll } from '../hooks.js';
import { Badge, ErrorBox } from '../components.jsx';
import { num } from '../format.js';

export function stateKind(state) {
  return state === 'STABLE' ? 'healthy' : state === 'EMPTY' ? 'neutral' : state === 'DEAD' ? 'critical' : 'degraded';
}

export function Groups() {
  const { data, error } = usePoll(() => get('/groups'), 2000, []);
  return (
    <div>
      <h2>Consumer groups</h2>
      <ErrorBox error={error} />
      <table data-testid="groups">
        <thead><tr><th>Group</th><th>State</th><th class="num">Members</th><th>Topics</th><th class="num">Lag</th></tr></thead>
        <tbody>
          {data && data.groups.map((g) => (
            <tr data-group={g.groupId}>
              <td><a href={'#/groups/' + enc(g.groupId)}>{g.groupId}</a></td>
              <td><Badge kind={stateKind(g.state)}>{g.state}</Badge></td>
              <td class="num">{g.members}</td>
              <td>{g.topics.join(', ')}</td>
              <td class="num" data-testid="lag">{num(g.lag)}</td>
            </tr>
          ))}
          {data && data.groups.length === 0 && <tr><td colSpan={5} class="muted">No consumer groups.</td></tr>}
        </tbody>
      </table>
    </div>
  );
}
