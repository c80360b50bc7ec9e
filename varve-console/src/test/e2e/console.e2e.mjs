// End-to-end test of the web console in a real browser (Debian's Chromium through playwright-core).
//
//   node console.e2e.mjs CONSOLE_URL SCREENSHOT_DIR BROKERS REPLICATION_FACTOR
//
// Run by varve-tests' ConsoleBrowserTest, which starts the cluster and does what a browser cannot (produce
// records, run a consumer, kill a broker). The two talk over this process's stdin and stdout: the script
// prints "@@ STEP" and waits for one line on stdin before it goes on. It exits 0 when every check passed,
// 1 otherwise (with a screenshot failure.png). playwright-core is found through NODE_PATH (varve-console's
// src/main/web/node_modules, which its Maven build installs).
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import readline from 'node:readline';

const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');

const [url, shots, brokersArg, rfArg] = process.argv.slice(2);
if (!url || !shots) {
  console.error('usage: node console.e2e.mjs CONSOLE_URL SCREENSHOT_DIR BROKERS REPLICATION_FACTOR');
  process.exit(2);
}
const BROKERS = Number(brokersArg || 1);
const RF = Number(rfArg || 1);
const TOPIC = 'e2e-orders';
const GROUP = 'e2e-readers';
const RECORDS = 30;
mkdirSync(shots, { recursive: true });

const lines = readline.createInterface({ input: process.stdin });
const pending = [];
lines.on('line', (l) => { const w = pending.shift(); if (w) w(l); });
/** Asks the Java side to do STEP and waits until it says it is done. */
function step(name) {
  console.log('@@ ' + name);
  return new Promise((resolve) => pending.push(resolve));
}
const log = (m) => console.log(new Date().toISOString().slice(11, 23) + ' ' + m);
const expectText = async (locator, pattern, timeout = 15000) => {
  const deadline = Date.now() + timeout;
  let last = '';
  while (Date.now() < deadline) {
    last = (await locator.textContent().catch(() => '')) || '';
    if (pattern instanceof RegExp ? pattern.test(last) : last.includes(pattern)) return last;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`expected ${pattern} in ${locator}, found: ${last.slice(0, 500)}`);
};

const profile = mkdtempSync(join(tmpdir(), 'varve-console-e2e-'));
let context;
let page;
const errors = [];
const timer = setTimeout(() => { console.error('e2e: over 150 s, giving up'); process.exit(1); }, 150_000);
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(15000);
  page.on('pageerror', (e) => errors.push(e.message));

  // ---- overview: every broker online
  await page.goto(url + '/ui/');
  const brokers = page.getByTestId('brokers');
  await expectText(brokers, new RegExp('(online[\\s\\S]*){' + BROKERS + '}'));
  await expectText(page.getByTestId('health'), 'healthy');
  log('overview: ' + BROKERS + ' broker(s) online, healthy');

  // ---- topics: create one through the form
  await page.click('header >> text=Topics');
  await page.getByTestId('new-topic').click();
  const form = page.getByTestId('create-topic');
  await form.locator('input[name=name]').fill(TOPIC);
  await form.locator('input[name=partitions]').fill('3');
  await form.locator('input[name=replicationFactor]').fill(String(RF));
  await form.locator('button[type=submit]').click();
  await expectText(page.getByTestId('topic-name'), TOPIC);
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=partitions] tbody tr').length === 3);
  log('topic created through the page, 3 partitions shown');

  // ---- records from a Java producer; the group committed at 0 on every partition (lag = all of them)
  await step('produce ' + TOPIC + ' ' + RECORDS + ' ' + GROUP);
  await page.reload();
  await page.waitForFunction((n) => {
    const cells = [...document.querySelectorAll('[data-testid=partitions] [data-testid=end-offset]')];
    return cells.length === 3 && cells.reduce((s, c) => s + Number(c.textContent.replace(/,/g, '')), 0) === n;
  }, RECORDS);
  log('topic detail: end offsets add up to ' + RECORDS);

  // ---- a config changed through the page, with confirmation
  await page.getByLabel('show defaults').click();
  const retention = page.locator('tr[data-config="retention.ms"]');
  await retention.getByTestId('edit-config').click();
  await retention.getByTestId('config-value').fill('86400000');
  await retention.getByTestId('save-config').click();
  const dialog = page.getByRole('dialog');
  await expectText(dialog, '86400000');
  await dialog.getByTestId('confirm').click();
  await dialog.waitFor({ state: 'detached' });
  await expectText(retention, /86400000[\s\S]*DYNAMIC_TOPIC_CONFIG/);
  await page.getByLabel('show defaults').click();
  await page.screenshot({ path: join(shots, 'topic-detail.png'), fullPage: true });
  log('retention.ms changed through the confirmation dialog');

  // ---- topics list
  await page.click('header >> text=Topics');
  await expectText(page.locator(`tr[data-topic="${TOPIC}"]`), /in sync/);
  await page.screenshot({ path: join(shots, 'topics.png'), fullPage: true });

  // ---- message browser: values decoded, filter
  await page.goto(url + '/ui/#/messages?topic=' + TOPIC);
  const browse = page.getByTestId('browse');
  await browse.locator('select[name=partition]').selectOption('1');
  await browse.locator('select[name=decode]').selectOption('json');
  await browse.locator('button[type=submit]').click();
  const messages = page.getByTestId('messages');
  await expectText(messages, '"item": "widget-1"');
  const rows = await messages.locator('tbody tr').count();
  if (rows !== RECORDS / 3) throw new Error('partition 1 shows ' + rows + ' messages, expected ' + RECORDS / 3);
  await expectText(messages, 'source: e2e');
  await browse.locator('input[name=filter]').fill('widget-13');
  await browse.locator('button[type=submit]').click();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=messages] tbody tr').length === 1);
  await expectText(messages, 'order-13');
  await browse.locator('input[name=filter]').fill('');
  await browse.locator('select[name=decode]').selectOption('text');
  await browse.locator('input[name=limit]').fill('6');
  await browse.locator('button[type=submit]').click();
  await expectText(messages, '{"id":1,"item":"widget-1"}');
  await page.screenshot({ path: join(shots, 'messages.png'), fullPage: true });
  log('messages browsed: JSON and text decoding, filter');

  // ---- groups: lag, then a consumer reads everything and the lag falls to zero
  await page.click('header >> text=Consumer groups');
  const groupRow = page.locator(`tr[data-group="${GROUP}"]`);
  await expectText(groupRow.getByTestId('lag'), String(RECORDS));
  await page.screenshot({ path: join(shots, 'groups.png'), fullPage: true });
  await groupRow.locator('a').click();
  await expectText(page.getByTestId('total-lag'), String(RECORDS));
  log('group lag ' + RECORDS + ' shown; starting the consumer');
  await step('consume ' + TOPIC + ' ' + GROUP);
  await expectText(page.getByTestId('total-lag'), /^0$/, 45000);
  await expectText(page.getByTestId('members'), 'e2e-consumer');
  await page.screenshot({ path: join(shots, 'group-detail.png'), fullPage: true });
  log('lag fell to 0 while the page watched');

  // ---- reset refused while the consumer is a member; done once it left
  const reset = page.getByTestId('reset');
  await reset.locator('select[name=to]').selectOption('earliest');
  await reset.locator('button[type=submit]').click();
  await dialog.getByTestId('confirm').click();
  await expectText(dialog.getByRole('alert'), 'active member');
  await dialog.getByText('Cancel').click();
  await step('stop-consumer');
  await expectText(page.getByTestId('members'), 'No active members', 30000);
  await reset.locator('button[type=submit]').click();
  await dialog.getByTestId('confirm').click();
  await dialog.waitFor({ state: 'detached' });
  await expectText(page.getByTestId('total-lag'), String(RECORDS));
  log('offsets reset to earliest through the page (refused while the group had a member)');

  // ---- delete a topic through the page, with confirmation
  await page.click('header >> text=Topics');
  await page.getByTestId('new-topic').click();
  await form.locator('input[name=name]').fill('e2e-scratch');
  await form.locator('button[type=submit]').click();
  await expectText(page.getByTestId('topic-name'), 'e2e-scratch');
  await page.getByTestId('delete-topic').click();
  await expectText(dialog, 'e2e-scratch');
  await dialog.getByTestId('confirm').click();
  await page.waitForURL(/#\/topics$/);
  await page.waitForFunction(() => document.querySelector('[data-testid=topics] tbody tr'));
  if (await page.locator('tr[data-topic="e2e-scratch"]').count()) throw new Error('e2e-scratch still listed after its deletion');
  log('topic deleted through the confirmation dialog');

  // ---- overview, its charts drawn from a steady trickle of records a Java producer sends now
  await step('traffic ' + TOPIC);
  await page.click('header >> text=Overview');
  await page.waitForFunction(() => document.querySelectorAll('.uplot').length === 3);
  await page.waitForFunction(() => {
    const t = document.querySelector('.chart .u-legend');
    return t !== null;
  });
  await page.waitForTimeout(6000); // three more samples of the traffic
  await page.screenshot({ path: join(shots, 'overview.png'), fullPage: true });
  log('overview charts drawn');

  // ---- a broker goes away: shown offline (fenced) on the overview
  if (BROKERS > 1) {
    await step('kill ' + BROKERS);
    await expectText(page.locator(`tr[data-broker="${BROKERS}"]`), 'offline', 40000);
    await expectText(page.getByTestId('health'), /degraded|critical/);
    await page.screenshot({ path: join(shots, 'overview-broker-offline.png'), fullPage: true });
    log('broker ' + BROKERS + ' shown offline');
  }
  if (errors.length) throw new Error('errors in the page: ' + errors.join('; '));
  console.log('e2e: all checks passed');
} catch (e) {
  console.error('e2e FAILED: ' + (e && e.stack || e));
  if (page) await page.screenshot({ path: join(shots, 'failure.png'), fullPage: true }).catch(() => {});
  process.exitCode = 1;
} finally {
  clearTimeout(timer);
  lines.close();
  if (context) await context.close().catch(() => {});
  rmSync(profile, { recursive: true, force: true });
}
