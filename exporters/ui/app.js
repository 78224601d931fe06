// glassbox's live page: polls /metrics on its own origin and draws the last
// minutes of each part in SVG. Plain script, no library, nothing fetched but
// /metrics. Memory stays flat: every series keeps its points in fixed-size
// typed arrays, and SVG and legend nodes are made once per series, then only
// updated.
'use strict';

(function () {
  const RATE_WINDOW_MS = 10000;  // counters' rates and histograms' quantiles span this
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const PLOT = { left: 62, right: 10, top: 18, bottom: 22, height: 180 };

  // What each part shows. A series reads `gauge` (summed), `rate` (a counter),
  // `ratio` (two counters' rates) or `histogram` (a quantile), optionally split
  // by one label (`by`); `{by}` in the label is that label's value.
  const gauge = (label, family, more) => ({ label, gauge: family, ...more });
  const rate = (label, family, more) => ({ label, rate: family, ...more });
  const quantile = (q, family, more) => ({ label: `p${q * 100}`, histogram: family, q, ...more });
  const chart = (id, title, unit, ...series) => ({ id, title, unit, series });
  const part = (title, ...charts) => ({ title, charts });
  const PARTS = [
    part('Caching pinned-host allocator',
      chart('host-bytes', 'Pinned host memory', 'bytes', gauge('reserved', 'glassbox_host_memory_reserved_bytes'),
        gauge('active', 'glassbox_host_memory_active_bytes'), gauge('cached', 'glassbox_host_memory_cached_bytes')),
      chart('host-hit-ratio', 'Cache hit ratio', 'ratio', { label: 'hits / requests',
        ratio: ['glassbox_host_alloc_cache_hits_total', 'glassbox_host_alloc_requests_total'] }),
      chart('host-backlog', 'Event backlog', 'events', gauge('events pending', 'glassbox_host_pending_events'))),
    part('cuBLAS / cuBLASLt / cuDNN handle pool',
      chart('handles', 'Handles in use against the high-water mark', 'handles',
        gauge('{by} in use', 'glassbox_handles_in_use', { by: 'library' }),
        gauge('{by} high-water', 'glassbox_handles_high_water_mark', { by: 'library', dashed: true }))),
    part('cuDNN state wrapper',
      chart('cudnn-executions', 'State executions', 'per second',
        rate('executions', 'glassbox_cudnn_state_executions_total')),
      chart('cudnn-wait', 'Lock wait, p99', 'seconds', quantile(0.99, 'glassbox_cudnn_state_wait_seconds'))),
    part('Reentrant backward engine',
      chart('backward-seconds', 'Backward pass duration', 'seconds',
        quantile(0.5, 'glassbox_autograd_backward_seconds'),
        quantile(0.99, 'glassbox_autograd_backward_seconds', { dashed: true })),
      chart('autograd-nodes', 'Nodes executed', 'per second', rate('nodes', 'glassbox_autograd_nodes_executed_total'))),
    part('Span exporters',
      chart('spans', 'Spans exported and dropped', 'per second',
        rate('{by} exported', 'glassbox_spans_exported_total', { by: 'exporter' }),
        rate('{by} dropped', 'glassbox_spans_dropped_total', { by: 'exporter', dashed: true })))
  ];

  // ?interval=MS and ?window=S, within bounds; a bad value is named on the page.
  const params = new URLSearchParams(location.search);
  const problems = [];
  function param(name, fallback, min, max) {
    if (!params.has(name)) return fallback;
    const v = Number(params.get(name));
    if (Number.isInteger(v) && v >= min && v <= max) return v;
    problems.push(`?${name}=${params.get(name)} ignored (a whole number ${min}–${max} is accepted)`);
    return fallback;
  }
  const intervalMs = param('interval', 1000, 50, 60000);
  const windowMs = param('window', 600, 10, 3600) * 1000;
  const capacity = Math.ceil(windowMs / intervalMs) + 2;

  // ---- the Prometheus text format ----------------------------------------

  function number(text) {
    if (text === '+Inf') return Infinity;
    if (text === '-Inf') return -Infinity;
    return Number(text);  // 'NaN' too
  }

  // Labels of `line` from `i` (just past '{'); returns [labels, index past '}'] or null.
  function parseLabels(line, i) {
    const labels = {};
    while (i < line.length && line[i] !== '}') {
      const eq = line.indexOf('="', i);
      if (eq < 0) return null;
      const key = line.slice(i, eq).trim();
      let value = '';
      for (i = eq + 2; i < line.length && line[i] !== '"'; i++) {
        if (line[i] === '\\') {
          i++;
          value += line[i] === 'n' ? '\n' : line[i];
        } else {
          value += line[i];
        }
      }
      labels[key] = value;
      i++;
      if (line[i] === ',') i++;
    }
    return i < line.length ? [labels, i + 1] : null;
  }

  // name -> [{labels, value}], only for the names in `wanted`.
  function parseExposition(text, wanted) {
    const byName = new Map();
    for (const line of text.split('\n')) {
      if (line === '' || line[0] === '#') continue;
      const end = line.search(/[{ ]/);
      if (end < 0) continue;
      const name = line.slice(0, end);
      if (!wanted.has(name)) continue;
      let labels = {};
      let rest = end;
      if (line[end] === '{') {
        const parsed = parseLabels(line, end + 1);
        if (!parsed) continue;
        [labels, rest] = parsed;
      }
      const value = number(line.slice(rest).trim().split(/\s+/)[0]);
      if (!byName.has(name)) byName.set(name, []);
      byName.get(name).push({ labels, value });
    }
    return byName;
  }

  // ---- reading one scrape into raw values --------------------------------

  // group (the `by` label's value, or '') -> sum of the samples of `name`.
  function sums(scrape, name, by) {
    const out = new Map();
    for (const s of scrape.get(name) || []) {
      const group = by ? s.labels[by] || '' : '';
      out.set(group, (out.get(group) || 0) + s.value);
    }
    return out;
  }

  // '' -> Map(upper bound -> cumulative count), summed over every series.
  function buckets(scrape, name) {
    const out = new Map();
    const rows = scrape.get(name + '_bucket') || [];
    if (rows.length === 0) return out;
    const byBound = new Map();
    for (const s of rows) {
      const le = number(s.labels.le);
      byBound.set(le, (byBound.get(le) || 0) + s.value);
    }
    out.set('', byBound);
    return out;
  }

  function raw(def, scrape) {
    if (def.gauge) return sums(scrape, def.gauge, def.by);
    if (def.rate) return sums(scrape, def.rate, def.by);
    if (def.ratio) {
      const hits = sums(scrape, def.ratio[0]).get('');
      const all = sums(scrape, def.ratio[1]).get('');
      return all === undefined ? new Map() : new Map([['', [hits || 0, all]]]);
    }
    return buckets(scrape, def.histogram);
  }

  // ---- turning raw values into points ------------------------------------

  // A counter's increase; one that went down restarted from zero.
  function increase(now, then) {
    return now >= then ? now - then : now;
  }

  // Prometheus's histogram_quantile over cumulative counts by upper bound.
  function histogramQuantile(q, counts) {
    const bounds = [...counts.keys()].sort((a, b) => a - b);
    const total = counts.get(Infinity);
    if (!(total > 0)) return NaN;
    const rank = q * total;
    let b = 0;
    while (counts.get(bounds[b]) < rank) b++;
    if (bounds[b] === Infinity) return b > 0 ? bounds[b - 1] : NaN;
    const lower = b > 0 ? bounds[b - 1] : 0;
    const below = b > 0 ? counts.get(bounds[b - 1]) : 0;
    return lower + (bounds[b] - lower) * (rank - below) / (counts.get(bounds[b]) - below);
  }

  function bucketIncrease(now, then) {
    const out = new Map();
    for (const [bound, count] of now) out.set(bound, increase(count, then ? then.get(bound) || 0 : 0));
    return out;
  }

  // The value drawn for `def`'s group at the latest frame, `base` being the
  // frame about RATE_WINDOW_MS earlier (or undefined).
  function derive(def, now, base, group) {
    const current = now.raw.get(def).get(group);
    if (def.gauge) return current;
    if (!base) return NaN;
    const before = base.raw.get(def).get(group);
    const seconds = (now.t - base.t) / 1000;
    if (def.rate) return increase(current, before || 0) / seconds;
    if (def.ratio) {
      const requests = increase(current[1], before ? before[1] : 0);
      return requests > 0 ? increase(current[0], before ? before[0] : 0) / requests : NaN;
    }
    return histogramQuantile(def.q, bucketIncrease(current, before));
  }

  // ---- fixed-size history per series -------------------------------------

  class Ring {
    constructor(size) {
      this.t = new Float64Array(size);
      this.v = new Float64Array(size);
      this.start = 0;
      this.length = 0;
    }
    push(t, v) {
      const size = this.t.length;
      const i = (this.start + this.length) % size;
      this.t[i] = t;
      this.v[i] = v;
      if (this.length < size) this.length++;
      else this.start = (this.start + 1) % size;
    }
    at(k) {
      const i = (this.start + k) % this.t.length;
      return [this.t[i], this.v[i]];
    }
    last() {
      return this.length ? this.at(this.length - 1)[1] : NaN;
    }
  }

  // ---- formatting --------------------------------------------------------

  function scaled(v, steps, base) {
    v = Number(v.toPrecision(12));  // 1e-7 / 1e-9 is 100, not 99.99999999999999
    let i = 0;
    while (Math.abs(v) >= base && i < steps.length - 1) {
      v /= base;
      i++;
    }
    const digits = Math.abs(v) >= 100 || Number.isInteger(v) ? 0 : Math.abs(v) >= 10 ? 1 : 2;
    return v.toFixed(digits) + steps[i];
  }

  function format(v, unit) {
    if (!Number.isFinite(v)) return '–';
    switch (unit) {
      case 'bytes': return scaled(v, [' B', ' KiB', ' MiB', ' GiB', ' TiB'], 1024);
      case 'ratio': return +(v * 100).toFixed(1) + ' %';
      case 'seconds': {
        if (v === 0) return '0 s';
        const units = [[1, ' s'], [1e-3, ' ms'], [1e-6, ' µs'], [1e-9, ' ns']];
        const [size, name] = units.find(([s]) => Math.abs(v) >= s) || units[units.length - 1];
        return scaled(v / size, [name], 1e9);
      }
      case 'per second': return scaled(v, ['/s', 'k/s', 'M/s', 'G/s'], 1000);
      default: return scaled(v, ['', 'k', 'M', 'G'], 1000);
    }
  }

  // A round top for the y axis and its tick step.
  function niceScale(max, unit) {
    if (unit === 'ratio') return [1, 0.25];
    if (!(max > 0)) max = 1;
    const base = unit === 'bytes' ? 2 : 10;
    let step = Math.pow(base, Math.floor(Math.log(max / 4) / Math.log(base)));
    if (unit !== 'bytes') {
      const fraction = max / 4 / step;
      step *= fraction > 5 ? 10 : fraction > 2 ? 5 : fraction > 1 ? 2 : 1;
    } else {
      while (max / step > 5) step *= 2;
    }
    if (unit === 'handles' || unit === 'events') step = Math.max(1, step);
    return [Math.ceil(max / step) * step, step];
  }

  // ---- drawing -----------------------------------------------------------

  function svg(name, attrs, parent) {
    const node = document.createElementNS(SVG_NS, name);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (parent) parent.appendChild(node);
    return node;
  }

  function element(name, className, parent, text) {
    const node = document.createElement(name);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }

  const COLORS = 6;

  class Chart {
    constructor(spec, parent) {
      this.spec = spec;
      this.series = new Map();  // key -> {def, group, ring, path, value}
      this.groups = [];         // the `by` values seen, for stable colours
      const card = element('section', 'chart', parent);
      card.id = 'chart-' + spec.id;
      card.dataset.chart = spec.id;
      element('h3', '', card, spec.title);
      this.svg = svg('svg', { role: 'img', 'aria-label': spec.title }, card);
      this.axes = svg('g', {}, this.svg);
      this.lines = svg('g', {}, this.svg);
      this.unitLabel = svg('text', { x: 2, y: 10, class: 'unit' }, this.svg);
      this.unitLabel.textContent = spec.unit === 'ratio' ? 'hit ratio' : spec.unit;
      this.legend = element('ul', 'legend', card);
      this.empty = element('p', 'empty', card, 'no samples yet (the family is not in the scrape)');
      // A fixed set of tick nodes, moved and relabelled on each draw.
      this.yTicks = Array.from({ length: 7 }, () => ({
        line: svg('line', { class: 'gridline' }, this.axes),
        text: svg('text', { 'text-anchor': 'end' }, this.axes)
      }));
      this.xTicks = Array.from({ length: 6 }, () => svg('text', { 'text-anchor': 'middle' }, this.axes));
      this.xAxis = svg('line', { class: 'axisline' }, this.axes);
    }

    // One point per series per frame; a series first seen gets its nodes now.
    add(frame, base) {
      for (const def of this.spec.series) {
        for (const group of frame.raw.get(def).keys()) {
          const key = def.label + '\u0000' + group;
          let s = this.series.get(key);
          if (!s) s = this.create(key, def, group);
          s.ring.push(frame.t, derive(def, frame, base, group));
        }
      }
    }

    create(key, def, group) {
      if (!this.groups.includes(group)) this.groups.push(group);
      const color = `var(--s${(def.by ? this.groups.indexOf(group) : this.spec.series.indexOf(def)) % COLORS})`;
      const path = svg('path', { class: 'line' + (def.dashed ? ' dashed' : ''), stroke: color }, this.lines);
      const item = element('li', '', this.legend);
      element('span', 'swatch' + (def.dashed ? ' dashed' : ''), item).style.borderColor = color;
      element('span', '', item, def.label.replace('{by}', group));
      const value = element('span', 'value', item);
      value.dataset.metric = def.gauge || def.rate || (def.ratio ? def.ratio.join('/') : def.histogram);
      value.dataset.group = group;
      value.dataset.kind = def.gauge ? 'gauge' : def.rate ? 'rate' : def.ratio ? 'ratio' : 'quantile';
      const s = { def, group, ring: new Ring(capacity), path, value };
      this.series.set(key, s);
      this.empty.hidden = true;
      return s;
    }

    draw(now) {
      const width = Math.max(200, this.svg.clientWidth || 400);
      const plotWidth = width - PLOT.left - PLOT.right;
      const plotHeight = PLOT.height - PLOT.top - PLOT.bottom;
      const from = now - windowMs;
      let max = 0;
      for (const s of this.series.values()) {
        for (let k = 0; k < s.ring.length; k++) {
          const [t, v] = s.ring.at(k);
          if (t >= from && Number.isFinite(v)) max = Math.max(max, v);
        }
      }
      const [top, step] = niceScale(max, this.spec.unit);
      const x = (t) => PLOT.left + (t - from) / windowMs * plotWidth;
      const y = (v) => PLOT.top + plotHeight - Math.min(v, top) / top * plotHeight;
      this.svg.setAttribute('viewBox', `0 0 ${width} ${PLOT.height}`);
      this.drawAxes(width, top, step, y);
      for (const s of this.series.values()) {
        let d = '';
        let points = 0;
        let pen = 'M';
        for (let k = 0; k < s.ring.length; k++) {
          const [t, v] = s.ring.at(k);
          if (t < from || !Number.isFinite(v)) {
            pen = 'M';
            continue;
          }
          d += `${pen}${x(t).toFixed(1)} ${y(v).toFixed(1)}`;
          pen = 'L';
          points++;
        }
        s.path.setAttribute('d', d);
        s.path.dataset.points = points;
        const latest = s.ring.last();
        s.value.textContent = format(latest, this.spec.unit);
        s.value.dataset.value = latest;
      }
    }

    drawAxes(width, top, step, y) {
      this.yTicks.forEach((tick, i) => {
        const v = i * step;
        const shown = v <= top + step / 1e6;
        tick.line.setAttribute('visibility', shown ? 'visible' : 'hidden');
        tick.text.setAttribute('visibility', shown ? 'visible' : 'hidden');
        if (!shown) return;
        const at = y(v).toFixed(1);
        for (const [k, val] of [['x1', PLOT.left], ['x2', width - PLOT.right], ['y1', at], ['y2', at]]) {
          tick.line.setAttribute(k, val);
        }
        tick.text.setAttribute('x', PLOT.left - 6);
        tick.text.setAttribute('y', Number(at) + 4);
        tick.text.textContent = format(v, this.spec.unit);
      });
      const bottom = PLOT.height - PLOT.bottom;
      for (const [k, val] of [['x1', PLOT.left], ['x2', width - PLOT.right], ['y1', bottom], ['y2', bottom]]) {
        this.xAxis.setAttribute(k, val);
      }
      const last = this.xTicks.length - 1;
      this.xTicks.forEach((text, i) => {
        const ago = windowMs * (last - i) / last;
        text.setAttribute('x', (PLOT.left + (width - PLOT.left - PLOT.right) * i / last).toFixed(1));
        text.setAttribute('y', PLOT.height - 6);
        text.textContent = i === last ? 'now' : windowMs >= 120000
          ? `−${+(ago / 60000).toFixed(1)} min` : `−${+(ago / 1000).toFixed(1)} s`;
      });
    }
  }

  // ---- the poll loop -----------------------------------------------------

  const charts = [];
  const main = document.getElementById('parts');
  for (const part of PARTS) {
    const section = element('section', 'part', main);
    section.style.setProperty('--charts', part.charts.length);
    element('h2', '', section, part.title);
    const grid = element('div', 'charts', section);
    for (const spec of part.charts) charts.push(new Chart(spec, grid));
  }
  const defs = charts.flatMap((c) => c.spec.series);
  const wanted = new Set(defs.flatMap((d) => d.gauge ? [d.gauge] : d.rate ? [d.rate]
    : d.ratio ? d.ratio : [d.histogram + '_bucket']));

  const status = document.getElementById('status');
  document.getElementById('interval-text').textContent = format(intervalMs / 1000, 'seconds');
  document.getElementById('window-text').textContent = windowMs >= 120000 ? `${windowMs / 60000} min`
    : `${windowMs / 1000} s`;

  // Frames within the rate window: the base of each rate and quantile.
  const frames = [];
  // Read by people (the status line) and by the browser test, which also
  // checks the arithmetic on inputs whose answers it knows.
  const state = window.glassboxLivePage = { polls: 0, failures: 0, lastError: '', intervalMs, windowMs,
    math: { parseExposition, histogramQuantile, increase, format } };

  function record(text, t) {
    const scrape = parseExposition(text, wanted);
    const frame = { t, raw: new Map(defs.map((d) => [d, raw(d, scrape)])) };
    while (frames.length > 1 && frames[1].t <= t - RATE_WINDOW_MS) frames.shift();
    const base = frames[0];  // the last frame at least RATE_WINDOW_MS old, else the oldest; none at first
    frames.push(frame);
    for (const chart of charts) {
      chart.add(frame, base);
      chart.draw(t);
    }
  }

  function show(text, failed) {
    status.textContent = problems.concat(text).join(' · ');
    status.classList.toggle('failed', failed);
  }

  async function poll() {
    const started = Date.now();
    try {
      const response = await fetch('metrics', {
        cache: 'no-store',
        headers: { Accept: 'text/plain' },
        signal: AbortSignal.timeout(Math.max(5000, 3 * intervalMs))
      });
      if (!response.ok) throw new Error(`/metrics answered ${response.status} ${response.statusText}`);
      const text = await response.text();
      const t = Date.now();
      record(text, t);
      state.polls++;
      state.lastPollAt = t;
      document.body.dataset.polls = state.polls;
      show(`scraped /metrics at ${new Date(t).toLocaleTimeString()} (${(text.length / 1024).toFixed(0)} KiB), ` +
        `every ${format(intervalMs / 1000, 'seconds')}`, false);
    } catch (e) {
      state.failures++;
      state.lastError = String(e.message || e);
      show(`scrape failed: ${state.lastError}; retrying`, true);
    }
    setTimeout(poll, Math.max(0, intervalMs - (Date.now() - started)));
  }

  window.addEventListener('resize', () => {
    for (const chart of charts) chart.draw(Date.now());
  });
  poll();
})();
