import { render } from 'preact';
import { useRoute } from './hooks.js';
import { Overview, startSampling } from './pages/Overview.jsx';
import { Topics } from './pages/Topics.jsx';
import { TopicDetail } from './pages/TopicDetail.jsx';
import { Groups } from './pages/Groups.jsx';
import { GroupDetail } from './pages/GroupDetail.jsx';
import { Messages } from './pages/Messages.jsx';
import './style.css';

const NAV = [
  ['overview', 'Overview'],
  ['topics', 'Topics'],
  ['groups', 'Consumer groups'],
  ['messages', 'Messages'],
];

function App() {
  const { segments, params } = useRoute();
  const [page = 'overview', id] = segments;
  let body;
  if (page === 'topics') body = id ? <TopicDetail key={id} name={id} /> : <Topics />;
  else if (page === 'groups') body = id ? <GroupDetail key={id} id={id} /> : <Groups />;
  else if (page === 'messages') body = <Messages key={params.topic || ''} params={params} />;
  else body = <Overview />;
  return (
    <>
      <header>
        <span class="brand">Varve</span>
        <nav>
          {NAV.map(([k, label]) => <a href={'#/' + k} class={page === k || (k === 'overview' && !NAV.some(([n]) => n === page)) ? 'active' : ''}>{label}</a>)}
        </nav>
      </header>
      <main>{body}</main>
    </>
  );
}

startSampling();
render(<App />, document.getElementById('app'));
