// The tether mirror's page (V2, V3): folds the fact stream (docs/FACTS.md) into what runs now,
// or what ran at the scrubbed moment of a recorded log. Everything a process or an agent wrote
// is put on the page with textContent, never as HTML (V4). No request leaves this origin.

const facts = [];
let mode = 'connecting';
let machines = [];
let position = 0;
let follow = true;
let scheduled = false;
let playing = null;
let drawnKey = null;

const $ = (id) => document.getElementById(id);

// Control characters as visible symbols (ESC → ␛): escapes show as text, they do nothing.
function visible(text) {
  return String(text ?? '').replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, (c) =>
    c === '\u007f' ? '\u2421' : String.fromCharCode(0x2400 + c.charCodeAt(0)),
  );
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === 'class') node.className = value;
    else node.setAttribute(key, String(value));
  }
  for (const child of children)
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  return node;
}

function svg(tag, attrs = {}) {
  const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  return node;
}

// The world after the first `n` facts.
function fold(n) {
  const world = {
    runtimes: new Map(),
    agents: new Map(),
    jobs: new Map(),
    terminals: new Map(),
    timeline: [],
    current: null,
  };
  for (const f of facts.slice(0, n)) {
    const rt = f.runtime;
    switch (f.type) {
      case 'runtime.started':
        world.runtimes.set(rt, { id: rt, pid: f.pid, containment: f.containment, status: 'live', ts: f.ts });
        world.current = rt;
        break;
      case 'runtime.disposing':
      case 'runtime.disposed': {
        const r = world.runtimes.get(rt) ?? { id: rt };
        r.status = f.type === 'runtime.disposing' ? 'disposing' : 'disposed';
        world.runtimes.set(rt, r);
        break;
      }
      case 'agent.created':
        world.agents.set(f.actor, {
          actor: f.actor,
          runtime: rt,
          phase: 'idle',
          wakes: 0,
          maxWakes: f.maxWakes,
          turns: 0,
          wake: f.wake,
        });
        break;
      case 'agent.phase': {
        const a = world.agents.get(f.actor) ?? { actor: f.actor, runtime: rt };
        Object.assign(a, { phase: f.phase, wakes: f.wakes, maxWakes: f.maxWakes, turns: f.turns });
        world.agents.set(f.actor, a);
        break;
      }
      case 'agent.retired': {
        const a = world.agents.get(f.actor);
        if (a) a.phase = 'retired';
        break;
      }
      case 'job.started':
        world.jobs.set(f.actor, {
          actor: f.actor,
          runtime: rt,
          owner: f.owner,
          kind: f.kind,
          label: f.label,
          state: 'running.active',
          startedAt: f.startedAt,
          exitCode: null,
          signal: null,
          tail: '',
          ended: false,
        });
        break;
      case 'job.state': {
        const j = world.jobs.get(f.actor);
        if (j) j.state = f.state;
        break;
      }
      case 'job.output': {
        const j = world.jobs.get(f.actor);
        if (j) j.tail = f.tail;
        break;
      }
      case 'job.ended': {
        const j = world.jobs.get(f.actor);
        if (j)
          Object.assign(j, {
            state: f.state,
            exitCode: f.exitCode,
            signal: f.signal,
            error: f.error,
            durationMs: f.durationMs,
            ended: true,
          });
        break;
      }
      case 'terminal.opened':
        world.terminals.set(f.actor, {
          actor: f.actor,
          runtime: rt,
          owner: f.owner,
          state: 'idle',
          screen: '',
          ended: false,
        });
        break;
      case 'terminal.state':
      case 'terminal.screen':
      case 'terminal.exited':
      case 'terminal.closed': {
        const t = world.terminals.get(f.actor) ?? {
          actor: f.actor,
          runtime: rt,
          state: 'opening',
          screen: '',
        };
        if (f.type === 'terminal.state') t.state = f.state;
        if (f.type === 'terminal.screen') t.screen = f.text;
        if (f.type === 'terminal.exited') Object.assign(t, { exitCode: f.exitCode, signal: f.signal });
        if (f.type === 'terminal.closed')
          Object.assign(t, { state: 'closed', reason: f.reason, ended: true });
        world.terminals.set(f.actor, t);
        break;
      }
      case 'notice.delivered':
        world.timeline.push({
          ts: f.ts,
          text: `notice to ${f.actor}: ${[...f.jobs, ...f.terminals].join(', ') || '(nothing)'}`,
        });
        break;
      case 'kill.verdict':
        world.timeline.push({
          ts: f.ts,
          text: `kill ${f.actor}: ${f.status} (proof ${f.proof}, ${f.killed} killed${f.escaped.length ? `, escaped ${f.escaped.join(' ')}` : ''})`,
        });
        break;
      case 'persist.resumed':
        world.timeline.push({
          ts: f.ts,
          text: `resumed persisted runtime '${f.name}': ${f.jobs} job(s), ${f.terminals} terminal(s) survived the restart`,
        });
        break;
      case 'job.adopted':
      case 'terminal.adopted': {
        const item = (f.type === 'job.adopted' ? world.jobs : world.terminals).get(f.actor);
        if (item) item.adopted = f.previousOwner;
        world.timeline.push({ ts: f.ts, text: `adopted ${f.actor} (previous owner ${f.previousOwner})` });
        break;
      }
      case 'recovery.reaped':
        world.timeline.push({ ts: f.ts, text: `recovered ${f.runtimes.length} dead runtime(s)` });
        break;
      case 'log.dropped':
      case 'mirror.dropped':
        world.timeline.push({
          ts: f.ts ?? Date.now(),
          text: `${f.dropped} facts dropped (the reader was too slow)`,
        });
        break;
    }
  }
  return world;
}

// G: controllable only while its runtime is the live one of a live mirror and it has not ended.
function controllable(world, item) {
  if (mode !== 'live' || item.ended || item.runtime !== world.current) return false;
  return world.runtimes.get(item.runtime)?.status === 'live';
}

function tagOf(world, item) {
  return controllable(world, item)
    ? el('span', { class: 'tag controllable', 'data-testid': 'control' }, 'still controllable')
    : el('span', { class: 'tag history', 'data-testid': 'control' }, 'was started');
}

const seconds = (ms) => (ms === undefined || ms === null ? '' : `${(ms / 1000).toFixed(2)} s`);

function renderJob(world, j) {
  const top = j.state.split('.')[0];
  return el(
    'div',
    { class: 'card job', 'data-actor': j.actor, 'data-state': top },
    el(
      'div',
      { class: 'row' },
      el('span', { class: `dot ${top}` }),
      el('b', { 'data-testid': 'job-state' }, j.state),
      el(
        'span',
        { 'data-testid': 'job-exit' },
        j.ended ? `exit ${j.exitCode ?? '–'}${j.signal ? ` ${j.signal}` : ''}` : '',
      ),
      el('span', {}, j.ended ? seconds(j.durationMs) : `since ${new Date(j.startedAt).toLocaleTimeString()}`),
      el('code', { 'data-testid': 'job-label' }, visible(j.label)),
      tagOf(world, j),
      el('small', {}, j.actor),
    ),
    el('pre', { 'data-testid': 'job-tail' }, visible(j.tail)),
  );
}

function renderTerminal(world, t) {
  return el(
    'div',
    { class: 'card terminal', 'data-actor': t.actor, 'data-state': t.state },
    el(
      'div',
      { class: 'row' },
      el('b', {}, t.state),
      el('span', {}, t.exitCode !== undefined && t.exitCode !== null ? `exit ${t.exitCode}` : ''),
      tagOf(world, t),
      el('small', {}, `${t.actor} (owner ${t.owner ?? '?'})`),
    ),
    el('pre', { class: 'screen', 'data-testid': 'screen' }, visible(t.screen)),
  );
}

function renderAgent(world, a) {
  return el(
    'div',
    { class: 'card agent', 'data-actor': a.actor, 'data-phase': a.phase },
    el(
      'div',
      { class: 'row' },
      el('b', {}, a.actor),
      el('span', { 'data-testid': 'phase' }, a.phase),
      el('span', {}, `wakes ${a.wakes ?? 0}/${a.maxWakes ?? '?'}, turns ${a.turns ?? 0}`),
      tagOf(world, a),
    ),
  );
}

// Which drawn state each live actor is in: `job.running.active` → ['job:job_x', …].
function liveStates(world) {
  const at = new Map();
  const mark = (id, actor) => at.set(id, [...(at.get(id) ?? []), actor]);
  for (const j of world.jobs.values()) if (controllable(world, j)) mark(`job.${j.state}`, j.actor);
  for (const t of world.terminals.values()) if (controllable(world, t)) mark(`terminal.${t.state}`, t.actor);
  for (const a of world.agents.values())
    if (a.phase !== 'retired' && controllable(world, a)) mark(`agent.${a.phase}`, a.actor);
  return at;
}

// A filled triangle at the end of a polyline, pointing along its last segment.
function arrowhead(points) {
  const tip = points[points.length - 1];
  const from = points[points.length - 2] ?? tip;
  const length = Math.hypot(tip.x - from.x, tip.y - from.y) || 1;
  const [dx, dy] = [(tip.x - from.x) / length, (tip.y - from.y) / length];
  const corner = (side) => `${tip.x - 8 * dx + side * 4 * dy},${tip.y - 8 * dy - side * 4 * dx}`;
  return svg('polygon', { class: 'arrowhead', points: `${tip.x},${tip.y} ${corner(1)} ${corner(-1)}` });
}

function renderMachine(m, at) {
  const box = svg('svg', {
    viewBox: `0 0 ${m.width} ${m.height}`,
    width: m.width,
    height: m.height,
    'data-machine': m.machine,
  });
  const byDepth = [...m.states].sort((a, b) => a.id.split('.').length - b.id.split('.').length);
  const compound = new Set(m.states.map((s) => s.parent).filter(Boolean));
  for (const s of byDepth) {
    const actors = at.get(s.id) ?? [];
    const classes = [
      'state',
      compound.has(s.id) ? 'compound' : '',
      s.final ? 'final' : '',
      actors.length ? 'current' : '',
    ];
    const g = svg('g', { class: classes.join(' ').trim(), 'data-state': s.id });
    const left = s.x - s.width / 2;
    const top = s.y - s.height / 2;
    g.append(svg('rect', { x: left, y: top, width: s.width, height: s.height, rx: 6 }));
    const label = svg('text', { x: left + 6, y: top + 13 });
    label.textContent = s.initial ? `→ ${s.label}` : s.label;
    g.append(label);
    // Events handled without leaving the state: one line each, inside its box.
    (s.events ?? []).forEach((event, i) => {
      const line = svg('text', { class: 'self', x: left + 8, y: top + 27 + i * 13 });
      line.textContent = `↻ ${event}`;
      g.append(line);
    });
    if (actors.length) {
      const badge = svg('text', { class: 'badge', x: s.x + s.width / 2 - 16, y: top + 13 });
      badge.textContent = String(actors.length);
      const title = svg('title');
      title.textContent = actors.join('\n');
      g.append(badge, title);
    }
    box.append(g);
  }
  for (const e of m.transitions) {
    if (e.points.length === 0) continue;
    const g = svg('g', { class: 'edge', 'data-from': e.from, 'data-to': e.to });
    g.append(
      svg('path', { d: e.points.map((p, i) => `${i ? 'L' : 'M'}${p.x},${p.y}`).join(' ') }),
      arrowhead(e.points),
    );
    const events = e.events ?? [e.event];
    const spot = e.label ?? e.points[Math.floor(e.points.length / 2)];
    events.forEach((event, i) => {
      const y = spot.y - ((events.length - 1) * 12) / 2 + i * 12 + 3;
      const text = svg('text', { x: spot.x, y, 'text-anchor': 'middle' });
      text.textContent = event;
      g.append(text);
    });
    box.append(g);
  }
  const title = el('b', {}, m.machine);
  const everywhere = m.everywhere?.length
    ? el(
        'span',
        { class: 'everywhere' },
        ` · in every state: ${m.everywhere.map((e) => `↻ ${e}`).join(', ')}`,
      )
    : '';
  return el('div', { class: 'card' }, title, everywhere, el('div', {}, box));
}

function render() {
  scheduled = false;
  const scrub = $('scrub');
  scrub.max = String(facts.length);
  if (follow) position = facts.length;
  scrub.value = String(position);
  const world = fold(position);
  const last = facts[position - 1];
  $('mode').textContent = mode === 'replay' ? 'replay of a recorded log (history only)' : mode;
  $('position').textContent =
    `fact ${position} of ${facts.length}${last ? ` · ${new Date(last.ts).toLocaleTimeString()}` : ''}`;
  const rt = world.current ? world.runtimes.get(world.current) : null;
  $('runtime').textContent = rt
    ? `runtime ${rt.id} (pid ${rt.pid}, containment ${rt.containment}): ${rt.status}`
    : 'no runtime yet';
  const isNow = (item) => item.runtime === world.current;
  const jobsByOwner = new Map();
  for (const j of world.jobs.values())
    if (isNow(j)) jobsByOwner.set(j.owner, [...(jobsByOwner.get(j.owner) ?? []), j]);
  $('agents').replaceChildren(...[...world.agents.values()].filter(isNow).map((a) => renderAgent(world, a)));
  $('jobs').replaceChildren(
    ...[...jobsByOwner].map(([owner, jobs]) =>
      el('div', { class: 'owner' }, el('h3', {}, `owner ${owner}`), ...jobs.map((j) => renderJob(world, j))),
    ),
  );
  $('terminals').replaceChildren(
    ...[...world.terminals.values()].filter(isNow).map((t) => renderTerminal(world, t)),
  );
  $('timeline').replaceChildren(
    ...world.timeline.map((t) => el('li', {}, `${new Date(t.ts).toLocaleTimeString()} ${visible(t.text)}`)),
  );
  const old = [...world.jobs.values(), ...world.terminals.values(), ...world.agents.values()].filter(
    (i) => !isNow(i),
  );
  $('history-section').hidden = old.length === 0;
  $('history').replaceChildren(
    ...old.map((i) =>
      el(
        'div',
        { class: 'card history', 'data-actor': i.actor },
        `${i.runtime} · ${i.actor} · ${i.state ?? i.phase} · was started (history)`,
      ),
    ),
  );
  // The diagrams are redrawn only when a live actor moved (they are the page's largest part).
  const at = liveStates(world);
  const key = JSON.stringify([...at]);
  if (key !== drawnKey) {
    drawnKey = key;
    $('machines').replaceChildren(...machines.map((m) => renderMachine(m, at)));
  }
  document.body.dataset.ready = String(mode !== 'connecting');
}

function schedule() {
  if (!scheduled) {
    scheduled = true;
    requestAnimationFrame(render);
  }
}

async function start() {
  machines = await (await fetch('/machines.json')).json();
  drawnKey = null;
  const events = new EventSource('/events');
  events.addEventListener('hello', (e) => {
    mode = JSON.parse(e.data).mode;
    facts.length = 0; // a reconnect replays the recent facts
    if (mode === 'replay') {
      follow = true;
      $('follow').checked = true;
    }
    schedule();
  });
  events.addEventListener('end', () => events.close());
  events.onmessage = (e) => {
    facts.push(JSON.parse(e.data));
    schedule();
  };
  $('scrub').addEventListener('input', (e) => {
    position = Number(e.target.value);
    follow = position === facts.length;
    $('follow').checked = follow;
    schedule();
  });
  $('follow').addEventListener('change', (e) => {
    follow = e.target.checked;
    schedule();
  });
  $('play').addEventListener('click', () => {
    if (playing) {
      clearInterval(playing);
      playing = null;
      return;
    }
    follow = false;
    $('follow').checked = false;
    if (position >= facts.length) position = 0;
    playing = setInterval(() => {
      position = Math.min(facts.length, position + 1);
      if (position >= facts.length) {
        clearInterval(playing);
        playing = null;
      }
      schedule();
    }, 50);
  });
  schedule();
}

start();
