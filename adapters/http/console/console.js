// The test console: plain DOM, no framework, no build. Every value from the server is put in the
// page as text (textContent, text nodes): never as markup. The admin token lives in this tab's
// session storage and goes out only in the Authorization header of same-origin calls.

const TOKEN_KEY = 'tokenvault.admin-token'
const JOURNAL_KEPT = 1000
const TOKEN_PAGE = 20

const $ = (id) => document.getElementById(id)

/** An element with attributes and children (strings become text nodes, never markup). */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (name === 'class') node.className = value
    else if (name === 'text') node.textContent = value
    else if (name.startsWith('data-')) node.setAttribute(name, value)
    else node[name] = value
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child)
  return node
}

/** `value` as display text: strings as they are, anything else as JSON. */
function show(value) {
  if (value === undefined || value === null) return '—'
  return typeof value === 'string' ? value : JSON.stringify(value)
}

function cell(value, className) {
  return el('td', className ? { class: className, text: show(value) } : { text: show(value) })
}

function list(items) {
  const td = el('td')
  for (const item of items) td.append(el('span', { class: 'chip', title: show(item), text: show(item) }))
  return td
}

/** Name and value pairs, one a line (metadata, a masked object). */
function pairs(entries, className) {
  const td = el('td', className ? { class: className } : {})
  for (const [key, value] of entries)
    td.append(
      el(
        'div',
        { class: 'pair' },
        el('span', { class: 'key', text: key }),
        el('span', { text: show(value) }),
      ),
    )
  return td
}

/** The pager `name` (its `-next`, `-first` and `-page` elements) under page `depth` of a list, `next` its cursor onwards. */
function showPager(name, next, depth) {
  $(`${name}-next`).disabled = next === undefined
  $(`${name}-next`).dataset.next = next ?? ''
  $(`${name}-first`).disabled = depth === 1
  $(`${name}-page`).textContent = `page ${depth}`
}

function replaceRows(tbody, rows, columns, empty) {
  tbody.replaceChildren(...rows)
  if (rows.length === 0)
    tbody.append(el('tr', {}, el('td', { colSpan: columns, class: 'muted', text: empty })))
}

// ---- the token and calls --------------------------------------------------------------------

class Unauthorized extends Error {}

function token() {
  return sessionStorage.getItem(TOKEN_KEY)
}

/** A same-origin call with the admin token in its header; the parsed answer, or an Error. */
async function call(method, path, body) {
  const headers = { authorization: `Bearer ${token() ?? ''}` }
  if (body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit',
    cache: 'no-store',
  })
  if (response.status === 401) throw new Unauthorized('the admin token was refused')
  const text = await response.text()
  const parsed = text ? JSON.parse(text) : undefined
  if (!response.ok) throw new Error(parsed?.detail ?? `${response.status}`)
  return parsed
}

const api = (method, path, body) => call(method, `api/${path}`, body)
const control = (method, path, body) => call(method, `../_test/${path}`, body)

function report(message, isError) {
  const status = $('status')
  status.textContent = message
  status.className = isError ? 'error' : 'muted'
}

/** Runs an action; a refused token sends back to the login form, any other failure is reported. */
async function guarded(action) {
  try {
    await action()
  } catch (error) {
    if (error instanceof Unauthorized) logout('The admin token was refused.')
    else report(error.message, true)
  }
}

// ---- login ----------------------------------------------------------------------------------

function showLogin(message) {
  $('app').hidden = true
  $('logout').hidden = true
  $('login').hidden = false
  $('login-error').textContent = message ?? ''
  $('token-input').focus()
}

function logout(message) {
  sessionStorage.removeItem(TOKEN_KEY)
  stopPolling()
  showLogin(message)
}

async function login(given) {
  sessionStorage.setItem(TOKEN_KEY, given)
  try {
    await api('GET', 'tenants')
  } catch (error) {
    sessionStorage.removeItem(TOKEN_KEY)
    showLogin(error instanceof Unauthorized ? 'That is not the admin token.' : error.message)
    return
  }
  $('login').hidden = true
  $('app').hidden = false
  $('logout').hidden = false
  startPolling()
  await guarded(() => openTab(location.hash.slice(1) || 'requests'))
}

// ---- tabs -----------------------------------------------------------------------------------

const TABS = ['requests', 'journal', 'tenants', 'time', 'snapshots', 'proxy', 'logs', 'webhooks']
let current = 'requests'

async function openTab(name) {
  current = TABS.includes(name) ? name : 'requests'
  for (const tab of TABS) $(tab).hidden = tab !== current
  for (const button of document.querySelectorAll('.tab'))
    button.classList.toggle('active', button.dataset.tab === current)
  if (location.hash !== `#${current}`) history.replaceState(null, '', `#${current}`)
  if (current === 'tenants') await loadTenants()
  if (current === 'time') await loadClock()
  if (current === 'snapshots') await loadSnapshots()
  if (current === 'proxy') await loadProxy()
  if (current === 'logs') await openLogs()
  if (current === 'webhooks') await openDeliveries()
}

// ---- journal --------------------------------------------------------------------------------

const journal = []
let lastSeq = 0
let polling = false

function actorText(actor) {
  if (actor.kind === 'admin' || actor.kind === 'unknown') return actor.kind
  return actor.kind === 'session' ? `session ${actor.id}` : actor.id
}

function matches(entry) {
  const tenant = $('filter-tenant').value
  const operation = $('filter-operation').value
  const outcome = $('filter-outcome').value
  if (tenant && entry.tenant_id !== tenant) return false
  if (operation && entry.operation !== operation) return false
  if (outcome === 'ok' && entry.outcome !== 'ok') return false
  if (outcome === 'failed' && entry.outcome === 'ok') return false
  if (outcome && outcome !== 'ok' && outcome !== 'failed' && entry.outcome !== outcome) return false
  return true
}

function journalRow(entry) {
  return el(
    'tr',
    { class: entry.outcome === 'ok' ? 'ok' : 'failed', 'data-seq': String(entry.seq) },
    cell(String(entry.seq), 'num'),
    cell(entry.at),
    cell(entry.tenant_name ? `${entry.tenant_name} (${entry.tenant_id})` : entry.tenant_id),
    cell(entry.actor_name ? `${entry.actor_name} (${actorText(entry.actor)})` : actorText(entry.actor)),
    cell(entry.operation),
    cell(entry.outcome),
    cell(entry.status === null ? '2xx' : String(entry.status), 'num'),
    cell(entry.ids.join(' ')),
  )
}

/** Adds the values seen to a filter's choices, keeping the one chosen. */
function addChoices(select, values) {
  const have = new Set([...select.options].map((o) => o.value))
  for (const value of [...values].sort()) {
    if (value === null || value === undefined || have.has(value)) continue
    select.append(el('option', { value, text: value }))
    have.add(value)
  }
}

function renderJournal() {
  const shown = journal.filter(matches).reverse()
  replaceRows($('journal-rows'), shown.map(journalRow), 8, 'No operation yet.')
  $('journal-count').textContent = `${shown.length} of ${journal.length}`
}

async function pollJournal() {
  const answer = await api('GET', `journal?after=${lastSeq}`)
  if (answer.data.length === 0) return false
  lastSeq = answer.last
  journal.push(...answer.data)
  if (journal.length > JOURNAL_KEPT) journal.splice(0, journal.length - JOURNAL_KEPT)
  addChoices(
    $('filter-tenant'),
    answer.data.map((e) => e.tenant_id),
  )
  addChoices(
    $('filter-operation'),
    answer.data.map((e) => e.operation),
  )
  addChoices(
    $('filter-outcome'),
    answer.data.map((e) => e.outcome).filter((o) => o !== 'ok'),
  )
  const tbody = $('journal-rows')
  if (tbody.querySelector('td[colspan]')) tbody.replaceChildren()
  for (const entry of answer.data) if (matches(entry)) tbody.prepend(journalRow(entry))
  while (tbody.rows.length > JOURNAL_KEPT) tbody.lastElementChild.remove()
  $('journal-count').textContent = `${tbody.querySelectorAll('tr[data-seq]').length} of ${journal.length}`
  return true
}

/** Follows the request log's stream; a dropped stream is opened again after a second. */
async function follow() {
  while (polling) {
    await guarded(async () => {
      await pollJournal()
      await loadStatus()
      await streamRequests()
    })
    if (polling) await new Promise((resolve) => setTimeout(resolve, 1000))
  }
}

function startPolling() {
  if (polling) return
  polling = true
  follow()
}

function stopPolling() {
  polling = false
  streamAbort?.abort()
  $('request-live').textContent = ''
}

// ---- requests -------------------------------------------------------------------------------

const REQUESTS_KEPT = 2000
const requests = []
let lastRequest = 0
let streamAbort
let offline = false

const actorName = (r) => (r.actor_name ? `${r.actor_name}` : r.actor_id ? r.actor_id : '—')
const tenantName = (r) => (r.tenant_name ? r.tenant_name : r.tenant_id ? r.tenant_id : '—')

/** Every text a search looks in: ids, names, operation, path, problem, the journal's ids. */
function haystack(r) {
  return [
    r.request_id,
    r.method,
    r.path,
    String(r.status),
    r.tenant_id,
    r.tenant_name,
    r.actor_id,
    r.actor_name,
    r.mark,
    ...r.operations,
    ...(r.journal_entries ?? []).flatMap((j) => j.ids),
    ...(r.trace ?? []).map((t) => t.token_id),
  ]
    .filter((v) => typeof v === 'string')
    .join(' ')
    .toLowerCase()
}

function requestMatches(r) {
  const text = $('request-search').value.trim().toLowerCase()
  const status = $('request-status').value
  const kind = $('request-kind').value
  const mark = $('request-mark').value
  if (text && !haystack(r).includes(text)) return false
  if (status === 'failed' && r.status < 400) return false
  if (status === 'ok' && r.status >= 400) return false
  if (kind && r.kind !== kind) return false
  if (mark && r.mark !== mark) return false
  return true
}

function requestRow(r) {
  const row = el(
    'tr',
    { class: `clickable ${r.status >= 400 ? 'failed' : 'ok'}`, 'data-request': r.request_id, tabIndex: 0 },
    cell(String(r.seq), 'num'),
    cell(r.wall.slice(11, 23), 'num'),
    cell(r.at, 'num'),
    cell(r.method, 'nowrap'),
    cell(r.path, 'path'),
    cell(String(r.status), 'num'),
    cell(actorName(r)),
    cell(tenantName(r)),
    cell(
      r.kind === 'fault'
        ? `fault ${r.fault?.id}`
        : r.kind === 'control'
          ? 'control plane'
          : r.operations.join(', ') || '—',
    ),
    cell(r.ms.toFixed(1), 'num'),
  )
  row.title = r.mark ? `mark: ${r.mark}` : ''
  return row
}

function renderRequests() {
  const shown = requests.filter(requestMatches).reverse()
  replaceRows(
    $('request-rows'),
    shown.map(requestRow),
    10,
    offline ? 'The file holds no request.' : 'No request yet.',
  )
  $('request-count').textContent = `${shown.length} of ${requests.length}`
}

function addRequests(entries) {
  for (const r of entries) {
    if (r.seq <= lastRequest && !offline) continue
    requests.push(r)
    lastRequest = Math.max(lastRequest, r.seq)
  }
  if (requests.length > REQUESTS_KEPT) requests.splice(0, requests.length - REQUESTS_KEPT)
  addChoices(
    $('request-mark'),
    entries.map((r) => r.mark),
  )
  renderRequests()
}

/** A definition list row. */
function field(dl, name, value) {
  dl.append(el('dt', { text: name }), el('dd', { text: show(value) }))
}

/** A button that opens the Tenants tab on a tenant (ids are links between the views). */
function tenantLink(tenantId, text) {
  return el('button', { type: 'button', class: 'link', 'data-tenant': tenantId, text })
}

function showProblem(problem) {
  const box = $('detail-problem')
  box.replaceChildren()
  if (!problem) return box.append(el('p', { class: 'muted', text: 'None: the request succeeded.' }))
  box.append(el('p', { class: 'problem-title', text: `${problem.status ?? ''} ${problem.title ?? ''}` }))
  if (problem.detail) box.append(el('p', { text: problem.detail }))
  if (problem.errors) {
    const dl = el('dl', { class: 'errors' })
    for (const [name, messages] of Object.entries(problem.errors))
      dl.append(
        el('dt', { text: name }),
        el('dd', { text: Array.isArray(messages) ? messages.join('; ') : show(messages) }),
      )
    box.append(dl)
  }
}

const VERDICTS = {
  decided: 'decided',
  lacks_permission: 'lacks the permission',
  does_not_cover: 'does not cover',
  outranked: 'outranked',
}

function showTrace(traces) {
  const box = $('detail-trace')
  box.replaceChildren()
  if (!traces?.length)
    return box.append(el('p', { class: 'muted', text: 'No refused or masked access decision.' }))
  for (const t of traces) {
    const head = `${t.permission} on ${t.token_id ?? 'the operation'} → ${t.decision ?? 'refused'}`
    const part = el(
      'div',
      { class: `trace ${t.decision === null ? 'refused' : 'granted'}` },
      el('h4', { text: head }),
    )
    part.append(el('p', { text: t.reason }))
    if (t.containers) part.append(el('p', { class: 'muted', text: `containers: ${t.containers.join(' ')}` }))
    if (t.rules.length) {
      const rows = t.rules.map((r) =>
        el(
          'tr',
          { class: r.verdict === 'decided' ? 'decided' : '' },
          cell(String(r.priority), 'num'),
          cell(r.description),
          cell(r.container ?? 'conditions'),
          cell(r.transform, 'nowrap'),
          cell(VERDICTS[r.verdict] ?? r.verdict),
        ),
      )
      part.append(
        el(
          'table',
          {},
          el(
            'thead',
            {},
            el(
              'tr',
              {},
              ...['Priority', 'Rule', 'Container', 'Transform', 'Verdict'].map((h) => el('th', { text: h })),
            ),
          ),
          el('tbody', {}, ...rows),
        ),
      )
    }
    box.append(part)
  }
}

function showJournal(r) {
  const box = $('detail-journal')
  box.replaceChildren()
  const entries = r.journal_entries ?? []
  if (!entries.length)
    return box.append(el('p', { class: 'muted', text: 'None: the service made no entry.' }))
  for (const j of entries) {
    const line = el(
      'div',
      { class: 'pair' },
      el('span', { class: 'key', text: `#${j.seq}` }),
      `${j.operation} ${j.outcome.ok ? 'ok' : j.outcome.code} `,
    )
    for (const id of j.ids)
      line.append(j.tenant_id ? tenantLink(j.tenant_id, id) : el('span', { class: 'chip', text: id }))
    box.append(line)
  }
}

function showDetail(r) {
  $('request-detail').hidden = false
  $('detail-id').textContent = r.request_id
  const dl = $('detail-fields')
  dl.replaceChildren()
  field(dl, 'Request', `${r.method} ${r.path}${r.query_keys.length ? `?${r.query_keys.join('=…&')}=…` : ''}`)
  field(dl, 'Status', String(r.status))
  field(dl, 'Kind', r.kind)
  field(dl, 'Wall time', r.wall)
  field(dl, 'Test clock', r.at)
  field(dl, 'Duration', `${r.ms} ms`)
  field(
    dl,
    'Application',
    r.actor_id ? `${actorName(r)} (${r.actor_id})` : 'none (the key did not authenticate)',
  )
  dl.append(
    el('dt', { text: 'Tenant' }),
    el('dd', {}, r.tenant_id ? tenantLink(r.tenant_id, `${tenantName(r)} (${r.tenant_id})`) : '—'),
  )
  if (r.fault)
    field(dl, 'Injected fault', `#${r.fault.id}: ${r.fault.method} ${r.fault.path} → ${r.fault.status}`)
  if (r.mark) field(dl, 'Mark', r.mark)
  showProblem(r.problem)
  showTrace(r.trace)
  showJournal(r)
}

async function openTenant(tenantId) {
  await openTab('tenants')
  if ([...$('tenant-select').options].some((o) => o.value === tenantId)) {
    $('tenant-select').value = tenantId
    cursors = [undefined]
    await loadTenant()
  }
}

/** Reads the server-sent events of the request log (with the token in a header, so not EventSource). */
async function streamRequests() {
  streamAbort?.abort()
  const abort = new AbortController()
  streamAbort = abort
  const response = await fetch(`api/requests/stream?after=${lastRequest}`, {
    headers: { authorization: `Bearer ${token() ?? ''}` },
    credentials: 'omit',
    cache: 'no-store',
    signal: abort.signal,
  })
  if (response.status === 401) throw new Unauthorized('the admin token was refused')
  if (!response.ok || !response.body) throw new Error(`the request stream answered ${response.status}`)
  $('request-live').textContent = '● live'
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    buffer += value
    let end = buffer.indexOf('\n\n')
    while (end !== -1) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const data = block
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n')
      if (data) await onRequest(JSON.parse(data))
      end = buffer.indexOf('\n\n')
    }
  }
}

/** One new exchange: listed, and the views it may change read again (no timer polls). */
async function onRequest(entry) {
  addRequests([entry])
  await pollJournal()
  await loadStatus()
  if (current === 'tenants' && entry.status < 400) await loadTenant()
}

async function loadStatus() {
  const status = await api('GET', 'status')
  if (status.clock) showNow(status.clock)
  const faults = status.faults
  const box = $('faults-box')
  box.replaceChildren(
    faults.length
      ? el('span', { class: 'error', text: `Faults waiting (${faults.length}): ` })
      : el('span', { text: 'No fault waiting.' }),
  )
  for (const f of faults)
    box.append(
      el('span', {
        class: 'chip',
        text: `#${f.id} ${f.method} ${f.path} → ${f.status ?? 'delay'} ×${f.times_left}${f.delay_ms ? ` after ${f.delay_ms} ms` : ''}`,
      }),
    )
}

async function exportLog() {
  const response = await fetch('api/requests/export', {
    headers: { authorization: `Bearer ${token() ?? ''}` },
    credentials: 'omit',
    cache: 'no-store',
  })
  if (!response.ok) throw new Error(`the export answered ${response.status}`)
  const name =
    /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? 'requests.json'
  const link = el('a', { href: URL.createObjectURL(await response.blob()), download: name })
  document.body.append(link)
  link.click()
  link.remove()
  report(`Exported ${name}.`)
}

/** Opens a saved log in this page, without the server: the live stream stops. */
async function openSaved(file) {
  const parsed = JSON.parse(await file.text())
  if (parsed?.format !== 'tokenvault-request-log/1' || !Array.isArray(parsed.data))
    throw new Error('That file is not a request log saved from this console.')
  offline = true
  streamAbort?.abort()
  stopPolling()
  $('login').hidden = true
  $('app').hidden = false
  requests.splice(0)
  addRequests(parsed.data)
  await openTab('requests')
  $('request-live').textContent = `offline: ${file.name} (exported ${parsed.exported_at})`
}

// ---- tenants --------------------------------------------------------------------------------

/** The cursors of the token pages shown so far: the last one is the current page's. */
let cursors = [undefined]

/** Fills a tenant `select` with every tenant, keeping the one chosen if it is still there. */
async function fillTenants(select) {
  const chosen = select.value
  const { data } = await api('GET', 'tenants')
  select.replaceChildren(...data.map((t) => el('option', { value: t.id, text: `${t.name} (${t.id})` })))
  if (data.some((t) => t.id === chosen)) select.value = chosen
}

async function loadTenants() {
  await fillTenants($('tenant-select'))
  await loadTenant()
}

/** The masked data: a string as it is, an object as its members, nothing without a mask. */
function maskedCell(masked) {
  if (masked === undefined) return cell('•••• (no mask)', 'masked')
  if (masked !== null && typeof masked === 'object' && !Array.isArray(masked))
    return pairs(Object.entries(masked), 'masked')
  return cell(masked, 'masked')
}

/** The fingerprint's first characters (the whole of it in the tooltip). */
function fingerprintCell(fingerprint) {
  if (fingerprint === undefined) return cell(undefined)
  return el('td', { class: 'id', title: fingerprint, text: `${fingerprint.slice(0, 10)}…` })
}

function tokenRow(t) {
  const links = [...t.links.parents.map((id) => `↑ ${id}`), ...t.links.children.map((id) => `↓ ${id}`)]
  return el(
    'tr',
    { 'data-token': t.id },
    cell(t.id, 'id'),
    cell(t.type, 'nowrap'),
    maskedCell(t.masked),
    list(t.containers),
    pairs(Object.entries(t.metadata)),
    fingerprintCell(t.fingerprint),
    cell(t.expires_at),
    list(links),
    cell(t.locked_by, 'id'),
  )
}

/** Counts the loads of the tenant view: an answer to an older one than the last is dropped. */
let loads = 0

async function fetchTokens(tenant) {
  const start = cursors[cursors.length - 1]
  const query =
    start === undefined ? `size=${TOKEN_PAGE}` : `size=${TOKEN_PAGE}&start=${encodeURIComponent(start)}`
  return api('GET', `tenants/${encodeURIComponent(tenant)}/tokens?${query}`)
}

function showTokens(page) {
  replaceRows($('token-rows'), page.data.map(tokenRow), 9, 'No live token.')
  showPager('tokens', page.next, cursors.length)
}

async function loadTokens(tenant) {
  const load = ++loads
  const page = await fetchTokens(tenant)
  if (load === loads) showTokens(page)
}

async function loadTenant() {
  const tenant = $('tenant-select').value
  if (!tenant) {
    for (const id of ['token-rows', 'transaction-rows', 'reactor-rows', 'application-rows'])
      replaceRows($(id), [], 9, 'No tenant.')
    return
  }
  const path = `tenants/${encodeURIComponent(tenant)}`
  const load = ++loads
  const [tokens, transactions, reactors, applications] = await Promise.all([
    fetchTokens(tenant),
    api('GET', `${path}/transactions`),
    api('GET', `${path}/reactors`),
    api('GET', `${path}/applications`),
  ])
  if (load !== loads) return
  showTokens(tokens)
  replaceRows(
    $('transaction-rows'),
    transactions.data.map((t) =>
      el(
        'tr',
        {},
        cell(t.id, 'id'),
        cell(t.created_by, 'id'),
        cell(t.created_at),
        cell(t.expires_at),
        cell(String(t.staged), 'num'),
        list(t.locks),
      ),
    ),
    6,
    transactions.truncated ? 'None among the first open transactions read.' : 'No open transaction.',
  )
  replaceRows(
    $('reactor-rows'),
    reactors.data.map((r) => {
      const formula = el('td', {
        text: r.formula ? `${r.formula.name ?? '(missing)'} (${r.formula.id})` : 'its own code',
      })
      if (r.code !== undefined)
        formula.append(el('details', {}, el('summary', { text: 'code' }), el('pre', { text: r.code })))
      const runs = r.runs.map((run) => `${run.at} ${run.outcome}`)
      return el('tr', {}, cell(r.id, 'id'), cell(r.name), formula, list(r.configuration_keys), list(runs))
    }),
    5,
    'No reactor.',
  )
  replaceRows(
    $('application-rows'),
    applications.data.map((a) => {
      const rules = el('td')
      for (const rule of a.rules ?? [])
        rules.append(
          el(
            'div',
            { class: 'rule' },
            `${rule.priority}. ${rule.transform} ${rule.container ?? JSON.stringify(rule.conditions ?? [])}: ${rule.permissions.join(', ')}`,
          ),
        )
      return el(
        'tr',
        {},
        cell(a.id, 'id'),
        cell(a.name),
        cell(a.type, 'nowrap'),
        list(a.permissions),
        rules,
        cell(a.expires_at),
      )
    }),
    6,
    'No application.',
  )
}

// ---- time -----------------------------------------------------------------------------------

function showNow(now) {
  $('clock-now').textContent = now
  $('clock-badge').textContent = now
}

async function loadClock() {
  showNow((await control('GET', 'clock')).now)
}

async function moveClock(body) {
  const moved = await control('POST', 'clock', body)
  showNow(moved.now)
  const s = moved.swept
  $('sweep-rows').prepend(
    el(
      'tr',
      {},
      cell(moved.now),
      ...[
        s.sessions,
        s.applications,
        s.transactions,
        s.tokens,
        s.cvcs,
        s.endedTransactions,
        s.idempotency,
      ].map((n) => cell(String(n ?? 0), 'num')),
    ),
  )
  report(`Clock moved to ${moved.now}; the sweep removed ${s.tokens} token(s).`)
}

// ---- snapshots ------------------------------------------------------------------------------

async function loadSnapshots() {
  const { data } = await api('GET', 'snapshots')
  replaceRows(
    $('snapshot-rows'),
    data
      .slice()
      .reverse()
      .map((s) =>
        el(
          'tr',
          {},
          cell(s.id, 'id'),
          cell(s.label || '—'),
          cell(s.clock),
          cell(String(s.counts.tenants ?? 0), 'num'),
          cell(String(s.counts.tokens ?? 0), 'num'),
          el(
            'td',
            {},
            el('button', { type: 'button', class: 'restore', 'data-snapshot': s.id, text: 'Restore' }),
          ),
        ),
      ),
    6,
    'No snapshot yet.',
  )
}

// ---- proxy: the test destinations and what they received --------------------------------------

/** The longest body shown in a row (the rest is cut, and said to be). */
const BODY_SHOWN = 4096

function bodyCell(body) {
  const text = body.length > BODY_SHOWN ? `${body.slice(0, BODY_SHOWN)}… (${body.length} characters)` : body
  return el('td', {}, el('pre', { text: text === '' ? '—' : text }))
}

async function loadProxy() {
  let destinations
  let received
  try {
    destinations = (await control('GET', 'proxy/destinations')).data
    received = (await control('GET', 'proxy')).data
  } catch (error) {
    if (error instanceof Unauthorized) throw error
    replaceRows($('destination-rows'), [], 2, 'No test destinations in this vault.')
    replaceRows($('received-rows'), [], 6, 'Nothing received.')
    return
  }
  replaceRows(
    $('destination-rows'),
    destinations.map((d) => el('tr', {}, cell(d.origin, 'mono'), cell(d.respond))),
    2,
    'No destination: POST /_test/proxy/destinations or --test-destination adds one.',
  )
  replaceRows(
    $('received-rows'),
    received.map((r, i) =>
      el(
        'tr',
        {},
        cell(String(i + 1), 'num'),
        cell(r.origin, 'mono'),
        cell(r.method),
        cell(r.url, 'mono'),
        pairs(Object.entries(r.headers ?? {})),
        bodyCell(String(r.body ?? '')),
      ),
    ),
    6,
    'Nothing received.',
  )
}

// ---- audit log: a tenant's entries, newest first ------------------------------------------------

const LOG_PAGE = 50
/** The cursors of the log pages shown so far: the last one is the current page's. */
let logCursors = [undefined]
let logLoads = 0

function logRow(e) {
  return el(
    'tr',
    {},
    cell(e.created_at, 'nowrap'),
    cell(e.actor_id ? `${e.actor_type} ${e.actor_id}` : e.actor_type, 'id'),
    cell(e.entity_id ? `${e.entity_type} ${e.entity_id}` : e.entity_type, 'id'),
    cell(e.operation, 'nowrap'),
    cell(e.outcome, e.outcome === 'success' ? 'nowrap' : 'nowrap error'),
    cell(e.message),
    cell(e.request_id, 'id'),
  )
}

async function openLogs() {
  await fillTenants($('log-tenant'))
  await loadLogs()
}

async function loadLogs() {
  const tenant = $('log-tenant').value
  if (!tenant) return replaceRows($('log-rows'), [], 7, 'No tenant.')
  const params = new URLSearchParams({ size: String(LOG_PAGE) })
  const type = $('log-entity-type').value.trim()
  const id = $('log-entity-id').value.trim()
  if (type) params.set('entity_type', type)
  if (id) params.set('entity_id', id)
  for (const [name, input] of [
    ['start_date', 'log-start-date'],
    ['end_date', 'log-end-date'],
  ]) {
    const value = $(input).value.trim()
    if (value) params.set(name, value)
  }
  const start = logCursors[logCursors.length - 1]
  if (start !== undefined) params.set('start', start)
  const load = ++logLoads
  const page = await api('GET', `tenants/${encodeURIComponent(tenant)}/logs?${params}`)
  if (load !== logLoads) return
  replaceRows($('log-rows'), page.data.map(logRow), 7, 'No entry.')
  showPager('logs', page.next, logCursors.length)
}

function showLogsFrom(cursors) {
  logCursors = cursors
  guarded(loadLogs)
}

async function verifyLogs() {
  const tenant = $('log-tenant').value
  if (!tenant) return
  const verdict = $('log-verdict')
  verdict.className = 'muted'
  verdict.textContent = 'Verifying…'
  const v = await api('GET', `tenants/${encodeURIComponent(tenant)}/logs/verify`)
  const b = v.broken
  verdict.className = v.ok ? 'ok' : 'error'
  verdict.textContent = v.ok
    ? `The chain holds: ${v.entries} entries on ${v.lanes} lane(s).`
    : `Broken at entry ${b.id} (lane ${b.lane}, seq ${b.seq}): ${b.reason}${b.expected === undefined ? '' : `, expected seq ${b.expected}`}; ${v.entries} entries hold before it.`
}

// ---- webhooks: a tenant's deliveries, oldest first ----------------------------------------------

const DELIVERY_PAGE = 50
/** The cursors (`after`) of the delivery pages shown so far: the last one is the current page's. */
let deliveryCursors = [undefined]
let deliveryLoads = 0

function attemptsCell(attempts) {
  return list(attempts.map((a) => `${a.at} ${a.ok ? 'ok' : 'failed'} ${a.status ?? a.error ?? ''}`.trim()))
}

function deliveryRow(d) {
  const again =
    d.state === 'pending'
      ? cell(undefined)
      : el(
          'td',
          {},
          el('button', { type: 'button', class: 'redeliver', 'data-delivery': d.id, text: 'Deliver again' }),
        )
  const body =
    d.body === undefined ? cell(`(withheld: ${d.body_chars} characters)`, 'muted') : bodyCell(d.body)
  return el(
    'tr',
    { 'data-delivery': d.id },
    cell(d.id, 'id'),
    cell(d.kind),
    cell(d.event_type, 'nowrap'),
    cell(d.url, 'mono'),
    cell(d.state, d.state === 'failed' ? 'error' : ''),
    cell(d.created_at, 'nowrap'),
    cell(d.due_at, 'nowrap'),
    attemptsCell(d.attempts),
    body,
    again,
  )
}

async function openDeliveries() {
  await fillTenants($('delivery-tenant'))
  await loadDeliveries()
  if (!$('signing-key').textContent) {
    try {
      $('signing-key').textContent = (await control('GET', 'webhooks/signing-key')).public_key
    } catch (error) {
      if (error instanceof Unauthorized) throw error
    }
  }
}

async function loadDeliveries() {
  const tenant = $('delivery-tenant').value
  if (!tenant) return replaceRows($('delivery-rows'), [], 10, 'No tenant.')
  const params = new URLSearchParams({ size: String(DELIVERY_PAGE) })
  const after = deliveryCursors[deliveryCursors.length - 1]
  if (after !== undefined) params.set('after', after)
  const load = ++deliveryLoads
  const page = await api('GET', `tenants/${encodeURIComponent(tenant)}/deliveries?${params}`)
  if (load !== deliveryLoads) return
  replaceRows($('delivery-rows'), page.data.map(deliveryRow), 10, 'No delivery.')
  showPager('deliveries', page.next, deliveryCursors.length)
}

function showDeliveriesFrom(cursors) {
  deliveryCursors = cursors
  guarded(loadDeliveries)
}

async function deliverNow() {
  const tenant = $('delivery-tenant').value
  if (!tenant) return
  const { attempted } = await api('POST', `tenants/${encodeURIComponent(tenant)}/deliveries/deliver`)
  $('delivery-note').textContent = `Attempted ${attempted} deliver${attempted === 1 ? 'y' : 'ies'}.`
  await loadDeliveries()
}

async function deliverAgain(id) {
  const tenant = $('delivery-tenant').value
  const path = `tenants/${encodeURIComponent(tenant)}/deliveries/${encodeURIComponent(id)}/redeliver`
  const d = await api('POST', path)
  $('delivery-note').textContent = `Delivery ${d.id} sent again: ${d.state}.`
  await loadDeliveries()
}

async function afterStateChange(message) {
  await loadClock()
  await loadSnapshots()
  report(message)
}

// ---- wiring ---------------------------------------------------------------------------------

function wire() {
  $('login-form').addEventListener('submit', (event) => {
    event.preventDefault()
    const given = $('token-input').value.trim()
    $('token-input').value = ''
    if (given) login(given)
  })
  $('logout').addEventListener('click', () => logout('The token is forgotten.'))
  for (const button of document.querySelectorAll('.tab'))
    button.addEventListener('click', () => guarded(() => openTab(button.dataset.tab)))
  for (const id of ['filter-tenant', 'filter-operation', 'filter-outcome'])
    $(id).addEventListener('change', renderJournal)
  for (const id of ['request-status', 'request-kind', 'request-mark'])
    $(id).addEventListener('change', renderRequests)
  $('request-search').addEventListener('input', renderRequests)
  $('request-rows').addEventListener('click', (event) => {
    const row = event.target.closest('tr[data-request]')
    const found = row && requests.find((r) => r.request_id === row.dataset.request)
    if (found) showDetail(found)
  })
  $('request-rows').addEventListener('keydown', (event) => {
    if (event.key === 'Enter') event.target.closest('tr[data-request]')?.click()
  })
  $('detail-close').addEventListener('click', () => {
    $('request-detail').hidden = true
  })
  document.addEventListener('click', (event) => {
    const link = event.target.closest('button.link[data-tenant]')
    if (link && !offline) guarded(() => openTenant(link.dataset.tenant))
  })
  $('request-export').addEventListener('click', () => guarded(exportLog))
  for (const id of ['request-open', 'offline-file'])
    $(id).addEventListener('change', (event) => {
      const file = event.target.files?.[0]
      if (file) guarded(() => openSaved(file))
    })
  setInterval(() => {
    $('wall-badge').textContent = new Date().toISOString().slice(0, 19).replace('T', ' ')
  }, 1000)
  $('tenant-select').addEventListener('change', () => {
    cursors = [undefined]
    guarded(loadTenant)
  })
  $('tenant-refresh').addEventListener('click', () => guarded(loadTenants))
  $('tokens-next').addEventListener('click', () => {
    cursors.push($('tokens-next').dataset.next)
    guarded(() => loadTokens($('tenant-select').value))
  })
  $('tokens-first').addEventListener('click', () => {
    cursors = [undefined]
    guarded(() => loadTokens($('tenant-select').value))
  })
  for (const button of document.querySelectorAll('[data-advance]'))
    button.addEventListener('click', () =>
      guarded(() => moveClock({ advance_ms: Number(button.dataset.advance) })),
    )
  $('clock-set-button').addEventListener('click', () =>
    guarded(async () => {
      const given = $('clock-set').value.trim()
      if (Number.isNaN(Date.parse(given))) throw new Error('Give an ISO time, like 2030-01-01T00:00:00Z.')
      await moveClock({ set: new Date(given).toISOString() })
    }),
  )
  $('snapshot-take').addEventListener('click', () =>
    guarded(async () => {
      const taken = await api('POST', 'snapshots', { label: $('snapshot-label').value })
      $('snapshot-label').value = ''
      await afterStateChange(`Snapshot ${taken.id} taken.`)
    }),
  )
  $('snapshot-rows').addEventListener('click', (event) => {
    const button = event.target.closest('button.restore')
    if (!button) return
    const id = button.dataset.snapshot
    guarded(async () => {
      await api('POST', `snapshots/${encodeURIComponent(id)}/restore`)
      await afterStateChange(`Snapshot ${id} restored.`)
    })
  })
  $('proxy-refresh').addEventListener('click', () => guarded(loadProxy))
  $('proxy-clear').addEventListener('click', () =>
    guarded(async () => {
      await control('DELETE', 'proxy')
      await loadProxy()
    }),
  )
  $('log-tenant').addEventListener('change', () => showLogsFrom([undefined]))
  $('log-show').addEventListener('click', () => showLogsFrom([undefined]))
  for (const id of ['log-entity-type', 'log-entity-id', 'log-start-date', 'log-end-date'])
    $(id).addEventListener('keydown', (event) => {
      if (event.key === 'Enter') showLogsFrom([undefined])
    })
  $('logs-next').addEventListener('click', () => showLogsFrom([...logCursors, $('logs-next').dataset.next]))
  $('logs-first').addEventListener('click', () => showLogsFrom([undefined]))
  $('log-verify').addEventListener('click', () => guarded(verifyLogs))
  $('delivery-tenant').addEventListener('change', () => showDeliveriesFrom([undefined]))
  $('delivery-refresh').addEventListener('click', () => guarded(loadDeliveries))
  $('delivery-now').addEventListener('click', () => guarded(deliverNow))
  $('deliveries-next').addEventListener('click', () =>
    showDeliveriesFrom([...deliveryCursors, $('deliveries-next').dataset.next]),
  )
  $('deliveries-first').addEventListener('click', () => showDeliveriesFrom([undefined]))
  $('delivery-rows').addEventListener('click', (event) => {
    const button = event.target.closest('button.redeliver')
    if (button) guarded(() => deliverAgain(button.dataset.delivery))
  })
  $('reset').addEventListener('click', () =>
    guarded(async () => {
      await control('POST', 'reset')
      await afterStateChange('Back to the state right after start.')
    }),
  )
}

wire()
if (token()) login(token())
else showLogin()
