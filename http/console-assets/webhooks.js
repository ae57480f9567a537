// Webhooks: the default endpoint (webhookUrl) and the others with their health, the delivery log with
// every attempt and its status code, replay and retry, and a signing secret shown once when it is made.
import { announce, badge, confirmDialog, errorBox, field, h, mount, secretDialog, table, when } from './ui.js';

const TEST_ROUTE = '/settings/webhook/endpoints/{id}/test';

/** Whether this service has the test-event route: read from its own OpenAPI document, so no event is sent to find out. */
async function hasTestRoute(ctx) {
  try {
    const response = await fetch(`${ctx.base}/openapi.json`, { credentials: 'omit' });
    if (!response.ok) return false;
    const document = await response.json();
    return Boolean(document.paths?.[TEST_ROUTE]?.post);
  } catch {
    return false;
  }
}

export async function renderWebhooks(ctx, container) {
  const { api } = ctx;
  const status = h('div', { 'aria-live': 'polite' });
  const [settings, health, endpoints, testable] = await Promise.all([
    api.call('GET', '/settings'),
    api.call('GET', '/settings/webhook'),
    api.call('GET', '/settings/webhook/endpoints'),
    hasTestRoute(ctx),
  ]);
  const reload = () => renderWebhooks(ctx, container);

  const act = async (label, work) => {
    try {
      const result = await work();
      announce(label);
      mount(status, h('p', { class: 'ok' }, label));
      return result;
    } catch (error) {
      mount(status, errorBox(error));
      return undefined;
    }
  };

  const replayParked = (endpointId) => act('Parked messages queued again', () => api.call('POST', `/settings/webhook/endpoints/${encodeURIComponent(endpointId)}/replay`, { body: { parked: true } }));
  // A sample of the type most receivers handle first: a document's conversion finished.
  const sendTest = (endpointId) =>
    act('Test event sent', () => api.call('POST', `/settings/webhook/endpoints/${encodeURIComponent(endpointId)}/test`, { body: { type: 'medical.document-conversion' } }));

  // --- The default endpoint ---
  const url = h('input', { type: 'url', name: 'webhookUrl', value: settings.webhookUrl ?? '', size: 50, placeholder: 'your receiver URL' });
  const defaultCard = h(
    'section',
    { class: 'card', 'aria-labelledby': 'default-title' },
    h('h2', { id: 'default-title' }, 'Default endpoint'),
    h(
      'p',
      {},
      settings.webhookEnabled ? badge('healthy', 'ok') : badge(settings.webhookUrl ? 'disabled' : 'not set', settings.webhookUrl ? 'bad' : 'info'),
      ' ',
      settings.webhookStatusDetail ?? '',
    ),
    h('p', {}, `Messages: ${health.messages.pending} pending, ${health.messages.delivered} delivered, ${health.messages.parked} parked`),
    h(
      'form',
      {
        class: 'row',
        onsubmit: async (event) => {
          event.preventDefault();
          const saved = await act('Webhook URL saved (pinged)', () => api.call('POST', '/settings', { body: { webhookUrl: url.value.trim() } }));
          if (saved) await reload();
        },
      },
      field('Webhook URL', url, 'The service pings it at once; an empty value clears it.'),
      h('button', { type: 'submit' }, 'Save'),
    ),
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'button', onclick: async () => (await act('Parked messages redelivered', () => api.call('POST', '/settings/webhook/retry'))) && reload() }, 'Retry every parked message'),
      settings.webhookUrl ? h('button', { type: 'button', onclick: () => replayParked('default') }, 'Replay parked (default)') : null,
      testable && settings.webhookUrl ? h('button', { type: 'button', onclick: () => sendTest('default') }, 'Send a test event') : null,
    ),
  );

  // --- Other endpoints ---
  const newUrl = h('input', { type: 'url', name: 'url', required: true, size: 40 });
  const description = h('input', { type: 'text', name: 'description', size: 30 });
  const endpointsCard = h(
    'section',
    { class: 'card', 'aria-labelledby': 'endpoints-title' },
    h('h2', { id: 'endpoints-title' }, 'Endpoints'),
    table(
      'Webhook endpoints besides the default one',
      ['URL', 'Health', 'Messages', 'Actions'],
      endpoints.endpoints.map((e) => [
        [h('code', {}, e.url), e.description ? h('div', { class: 'muted' }, e.description) : null],
        [
          e.enabled ? badge('enabled', 'ok') : badge('disabled', 'bad'),
          // healthy, failing (every attempt since failingSince failed) or disabled; older services have only the detail.
          typeof e.health === 'string' ? [' ', badge(e.health, e.health === 'healthy' ? 'ok' : 'warn')] : null,
          e.failingSince ? h('div', { class: 'muted' }, `failing since ${e.failingSince}`) : null,
          e.statusDetail ? h('div', { class: 'muted' }, e.statusDetail) : null,
        ],
        `${e.messages.pending} pending (${e.messages.failing} failing), ${e.messages.delivered} delivered, ${e.messages.parked} parked`,
        h(
          'div',
          { class: 'actions' },
          h('button', { type: 'button', onclick: () => replayParked(e.id), 'aria-label': `Replay parked messages to ${e.url}` }, 'Replay parked'),
          testable ? h('button', { type: 'button', onclick: () => sendTest(e.id), 'aria-label': `Send a test event to ${e.url}` }, 'Test') : null,
          h(
            'button',
            {
              type: 'button',
              'aria-label': `Rotate the signing secret of ${e.url}`,
              onclick: async () => {
                if (!(await confirmDialog({ title: 'Rotate the signing secret?', body: 'The old secret keeps signing beside the new one for 24 hours.', confirm: 'Rotate' }))) return;
                const rotated = await act('Secret rotated', () => api.call('POST', `/settings/webhook/endpoints/${encodeURIComponent(e.id)}/rotate-secret`, { body: {} }));
                if (rotated) await secretDialog({ title: 'New signing secret', body: 'Copy it now: the console will not show it again.', secret: rotated.signingSecret });
              },
            },
            'Rotate secret',
          ),
          h(
            'button',
            {
              type: 'button',
              'aria-label': `${e.enabled ? 'Disable' : 'Enable'} ${e.url}`,
              onclick: async () => (await act(e.enabled ? 'Endpoint disabled' : 'Endpoint enabled', () => api.call('PATCH', `/settings/webhook/endpoints/${encodeURIComponent(e.id)}`, { body: { enabled: !e.enabled } }))) && reload(),
            },
            e.enabled ? 'Disable' : 'Enable',
          ),
          h(
            'button',
            {
              type: 'button',
              class: 'danger',
              'aria-label': `Delete ${e.url}`,
              onclick: async () => {
                if (!(await confirmDialog({ title: 'Delete this endpoint?', body: `${e.url} and the messages waiting for it will be removed.`, confirm: 'Delete', danger: true }))) return;
                if (await act('Endpoint deleted', () => api.call('DELETE', `/settings/webhook/endpoints/${encodeURIComponent(e.id)}`).then(() => true))) await reload();
              },
            },
            'Delete',
          ),
        ),
      ]),
      { captionHidden: true, empty: 'No other endpoints.' },
    ),
    h(
      'form',
      {
        class: 'row',
        onsubmit: async (event) => {
          event.preventDefault();
          const created = await act('Endpoint added', () => api.call('POST', '/settings/webhook/endpoints', { body: { url: newUrl.value.trim(), description: description.value.trim() || undefined } }));
          if (!created) return;
          await secretDialog({ title: 'Signing secret of the new endpoint', body: 'Copy it now: the console will not show it again.', secret: created.signingSecret });
          await reload();
        },
      },
      field('Endpoint URL', newUrl),
      field('Description', description),
      h('button', { type: 'submit' }, 'Add endpoint'),
    ),
  );

  // --- The delivery log ---
  const endpointFilter = h('select', { name: 'endpointId' }, h('option', { value: '' }, 'Every endpoint'), h('option', { value: 'default' }, 'Default'), endpoints.endpoints.map((e) => h('option', { value: e.id }, e.url)));
  const statusFilter = h('select', { name: 'status' }, h('option', { value: '' }, 'Any outcome'), h('option', { value: 'delivered' }, 'Delivered'), h('option', { value: 'failed' }, 'Failed'));
  const log = h('div');
  let cursor = null;
  let shown = [];
  async function loadLog(more) {
    if (!more) {
      shown = [];
      cursor = null;
    }
    try {
      const page = await api.call('GET', '/settings/webhook/attempts', { query: { endpointId: endpointFilter.value || undefined, status: statusFilter.value || undefined, limit: 50, cursor: more ? cursor : undefined } });
      shown = [...shown, ...page.attempts];
      cursor = page.nextCursor;
    } catch (error) {
      return mount(log, errorBox(error));
    }
    mount(
      log,
      table(
        'Delivery attempts, newest first',
        ['When', 'Type', 'Endpoint', 'Outcome', 'Status code', 'Time', 'Error', ''],
        shown.map((a) => [
          when(a.attemptedAt),
          a.type,
          a.endpointId === 'default' ? 'default' : endpoints.endpoints.find((e) => e.id === a.endpointId)?.url ?? a.endpointId,
          a.status === 'delivered' ? badge('delivered', 'ok') : badge('failed', 'bad'),
          a.statusCode ?? 'none',
          `${a.latencyMs} ms`,
          a.error ?? '',
          h(
            'button',
            {
              type: 'button',
              'aria-label': `Replay message ${a.messageId} (${a.type})`,
              onclick: () => act('Message replayed', () => api.call('POST', `/settings/webhook/endpoints/${encodeURIComponent(a.endpointId)}/replay`, { body: { messageId: a.messageId } })),
            },
            'Replay',
          ),
        ]),
        { class: 'attempts', empty: 'No delivery attempts yet.' },
      ),
      cursor ? h('button', { type: 'button', onclick: () => loadLog(true) }, 'Load more') : null,
    );
  }
  endpointFilter.addEventListener('change', () => loadLog(false));
  statusFilter.addEventListener('change', () => loadLog(false));
  const logCard = h(
    'section',
    { class: 'card', 'aria-labelledby': 'log-title' },
    h('h2', { id: 'log-title' }, 'Delivery log'),
    h('div', { class: 'row' }, field('Endpoint', endpointFilter), field('Outcome', statusFilter), h('button', { type: 'button', onclick: () => loadLog(false) }, 'Refresh')),
    log,
  );

  mount(container, h('h1', {}, 'Webhooks'), status, defaultCard, endpointsCard, logCard);
  await loadLog(false);
}
