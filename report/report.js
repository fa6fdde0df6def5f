// Draws a shardplan report page from its JSON blob (report/report_data.h) with Chart.js 3, and
// records the page's state on <body> for tests/report/render_test.sh: data-status ("loading",
// "ok" or "error: ..."), data-charts (charts drawn), data-empty-charts (charts with no data) and
// data-draw-ms (the time drawing them took).
// It is the page's first script, so that an error anywhere, or a fetch the page's
// Content-Security-Policy blocks, is recorded; it draws on "load", once Chart.js is parsed.
'use strict';
(function () {
  const body = document.body;
  const errors = [];
  const charts = [];  // [chart, number of data points it shows]

  function fail(message) {
    errors.push(message);
    body.dataset.status = 'error: ' + errors.join('; ');
  }
  window.onerror = (message, source, line) => fail('script: ' + message + ' (line ' + line + ')');
  window.addEventListener('unhandledrejection', (e) => fail('promise: ' + e.reason));
  document.addEventListener('securitypolicyviolation',
                            (e) => fail('blocked ' + e.violatedDirective + ': ' + e.blockedURI));

  // ---- formatting ----
  const GiB = 2 ** 30;
  function seconds(s) {
    const a = Math.abs(s);
    if (a >= 1) return s.toFixed(3) + ' s';
    if (a >= 1e-3) return (s * 1e3).toFixed(2) + ' ms';
    return (s * 1e6).toFixed(1) + ' \u00b5s';
  }
  const MiB = 2 ** 20;
  function bytes(b) { return b >= GiB ? (b / GiB).toFixed(2) + ' GiB' : (b / MiB).toFixed(2) + ' MiB'; }
  function percent(r) { return (100 * r).toFixed(1) + '%'; }
  function signedPercent(r) { return (r >= 0 ? '+' : '') + (100 * r).toFixed(1) + '%'; }
  const palette = ['#2563eb', '#ea580c', '#16a34a', '#9333ea', '#dc2626', '#0891b2', '#ca8a04',
                   '#db2777', '#4b5563', '#65a30d', '#7c3aed', '#0d9488', '#b45309', '#1e40af'];
  const color = (i) => palette[i % palette.length];
  // Memory items by what holds them: model state in blues, greens and purples, activations in
  // reds, buffers in yellows, the runtime's and the allocator's reserve in greys.
  const itemShades = [
    [/master|param/, ['#1e40af', '#3b82f6']], [/grad/, ['#15803d', '#4ade80']],
    [/optimizer/, ['#7e22ce', '#c084fc']], [/activation|recompute/, ['#b91c1c', '#f87171', '#fca5a5']],
    [/logits|buffer|gather|other/, ['#a16207', '#eab308', '#fde047', '#ca8a04']],
    [/cache|context|cublas|nccl|runtime|reserve/, ['#374151', '#6b7280', '#9ca3af', '#d1d5db']],
  ];
  function itemColor(item, used) {
    for (const [pattern, shades] of itemShades)
      if (pattern.test(item)) {
        const shade = shades.find((c) => !used.has(c)) || shades[0];
        used.add(shade);
        return shade;
      }
    return color(used.size);
  }
  // Timeline kinds: compute in blues and greens, communication in warm colours, idle in grey.
  const kindColors = {
    forward: '#2563eb', backward: '#16a34a', weight_grad: '#0d9488', recompute: '#65a30d',
    optimizer_step: '#9333ea',
    'tp-comm': '#ea580c', 'cp-comm': '#db2777', 'ep-comm': '#ca8a04', 'dp-comm': '#dc2626',
    'zero-comm': '#b45309', 'pp-comm': '#0891b2', idle: '#d1d5db',
  };

  // ---- page building ----
  function el(tag, attributes, ...children) {
    const e = document.createElement(tag);
    Object.assign(e, attributes || {});
    for (const c of children) e.append(c);
    return e;
  }
  let main = null;  // <main>, parsed after this script
  function section(title) {
    main.append(el('h2', {textContent: title}));
    const s = el('section');
    main.append(s);
    return s;
  }
  function chart(parent, height, config, points) {
    const box = el('div', {className: 'chart'});
    box.style.height = height + 'px';
    const canvas = el('canvas');
    box.append(canvas);
    parent.append(box);
    config.options = Object.assign({animation: false, maintainAspectRatio: false}, config.options);
    charts.push([new Chart(canvas, config), points]);
  }
  function axis(title, extra) { return Object.assign({title: {display: true, text: title}}, extra); }
  // Log axes label their ticks as the values they are, and only the round ones.
  function logTicks(show) {
    return {callback: (v) => (/^[125]/.test(v.toExponential()) ? show(v) : '')};
  }

  // A table whose columns sort on a click: columns [{title, value(row), text(row), layout}].
  function sortableTable(rows, columns, rowClass) {
    const tbody = el('tbody');
    const fill = () => {
      tbody.replaceChildren(...rows.map((r) => el('tr', {className: rowClass ? rowClass(r) : ''},
        ...columns.map((c) => el('td', {className: c.layout ? 'layout' : '', textContent: c.text(r)})))));
    };
    let sortedBy = null;
    const head = el('tr', {}, ...columns.map((c) => el('th', {
      className: c.layout ? 'layout' : '', textContent: c.title, title: 'sort',
      onclick: () => {
        const sign = sortedBy === c ? -1 : 1;
        sortedBy = sign === 1 ? c : null;
        rows.sort((a, b) => {
          const x = c.value(a), y = c.value(b);
          return sign * (typeof x === 'string' ? x.localeCompare(y) : x - y);
        });
        fill();
      },
    })));
    fill();
    return el('div', {className: 'scroll wide'}, el('table', {}, el('thead', {}, head), tbody));
  }

  // ---- (1) ranked layouts ----
  function drawRanking(r) {
    const s = section('Ranked layouts');
    const c = r.counts;
    s.append(el('p', {className: 'caption', textContent:
      `${c.layouts} layouts searched in ${seconds(c.wall_s)}; ${c.fitting} fit, ${c.timed} timed in ` +
      `full. Shown: the best ${r.layouts.filter((l) => l.rank > 0).length} and the best layout of ` +
      'each other value of each field (the search keeps no others); \u25C6 on the Pareto frontier ' +
      'of step time against memory.'}));
    const row = el('div', {className: 'row'});
    s.append(row);
    const rows = r.layouts.slice();
    row.append(sortableTable(rows, [
      {title: '#', value: (l) => l.rank || 1e9, text: (l) => l.rank || l.alternative},
      {title: 'layout', layout: true, value: (l) => l.layout, text: (l) => l.layout},
      {title: 'step time', value: (l) => l.step_time_s, text: (l) => seconds(l.step_time_s)},
      {title: 'MFU', value: (l) => l.mfu, text: (l) => percent(l.mfu)},
      {title: 'memory (GiB)', value: (l) => l.reserved_bytes,
       text: (l) => (l.reserved_bytes / GiB).toFixed(1) + ' / ' + (l.usable_bytes / GiB).toFixed(1)},
      {title: 'exposed comm', value: (l) => l.exposed_comm_s, text: (l) => seconds(l.exposed_comm_s)},
      {title: 'bubble', value: (l) => l.bubble_fraction, text: (l) => percent(l.bubble_fraction)},
    ], (l) => (l.pareto ? 'pareto' : '')));
    const point = (l) => ({x: l.step_time_s, y: l.reserved_bytes / GiB, layout: l.layout});
    const frontier = r.layouts.filter((l) => l.pareto).map(point).sort((a, b) => a.x - b.x);
    const holder = el('div', {className: 'side'});
    row.append(holder);
    chart(holder, 400, {
      type: 'scatter',
      data: {datasets: [
        {label: 'Pareto frontier', data: frontier, showLine: true, borderColor: '#c2410c',
         backgroundColor: '#c2410c', pointRadius: 6, pointStyle: 'rectRot'},
        {label: 'top layouts', data: r.layouts.filter((l) => l.rank > 0).map(point),
         backgroundColor: color(0), pointRadius: 4},
        {label: 'best of another field value', data: r.layouts.filter((l) => !l.rank).map(point),
         backgroundColor: color(8), pointRadius: 3},
      ]},
      options: {
        scales: {x: axis('step time (s)'), y: axis('memory reserved per device, worst rank (GiB)')},
        plugins: {tooltip: {callbacks: {label: (ctx) =>
          `${ctx.raw.layout}: ${seconds(ctx.raw.x)}, ${ctx.raw.y.toFixed(1)} GiB`}}},
      },
    }, r.layouts.length);
  }

  // ---- (2) memory ----
  function drawMemory(m) {
    const s = section('Memory by stage or rank');
    s.append(el('p', {className: 'caption', textContent: 'From ' + m.source +
      (m.capacity_bytes ? '; the line is the device\u2019s capacity.' : '.')}));
    const items = [];
    for (const c of m.columns)
      for (const [item, b] of Object.entries(c.items))
        if (b > 0 && !items.includes(item)) items.push(item);
    const largest = Math.max(m.capacity_bytes || 0,
                             ...m.columns.map((c) => Object.values(c.items).reduce((a, b) => a + b, 0)));
    const [unit, unitName] = largest >= GiB ? [GiB, 'GiB'] : [MiB, 'MiB'];
    const used = new Set();
    const datasets = items.map((item) => ({
      label: item, backgroundColor: itemColor(item, used), stack: 'items', maxBarThickness: 140,
      data: m.columns.map((c) => (c.items[item] || 0) / unit),
    }));
    if (m.capacity_bytes)
      datasets.push({type: 'line', label: 'device capacity', stack: 'capacity', borderColor: '#111827',
                     borderDash: [6, 4], pointRadius: 0, borderWidth: 2,
                     data: m.columns.map(() => m.capacity_bytes / unit)});
    chart(s, 420, {
      type: 'bar',
      data: {labels: m.columns.map((c) => c.label), datasets},
      options: {
        scales: {x: {stacked: true}, y: axis(unitName, {stacked: true, beginAtZero: true})},
        plugins: {tooltip: {callbacks: {label: (ctx) => `${ctx.dataset.label}: ${bytes(ctx.raw * unit)}`}}},
      },
    }, m.columns.length * items.length);
  }

  // ---- (3) timelines ----
  function drawTimeline(t) {
    const s = section('Step timeline: ' + t.file);
    const several = t.groups.length > 1;
    const labels = t.lanes.map((l) => (several ? l.group + ' ' : '') + l.label);
    const span = Math.max(...t.groups.map((g) => g.span_s));
    s.append(el('p', {className: 'caption', textContent: t.groups.map((g) =>
      `${g.label}: step ${seconds(g.span_s)}, ${g.ranks_shown} of ${g.ranks} ranks shown`).join('; ') +
      '. Each group starts at 0. Idle: the compute stream waiting (pipeline bubble, exposed ' +
      'communication). A lane of more actions than the page draws is shown at a screen\u2019s resolution.'}));
    let bars = 0;
    const datasets = t.kinds.map((kind, k) => ({
      label: kind, backgroundColor: kindColors[kind] || color(k), data: [],
    }));
    t.lanes.forEach((lane, i) => {
      for (const [start, end, kind] of lane.bars) datasets[kind].data.push({x: [start, end], y: labels[i]});
      bars += lane.bars.length;
    });
    chart(s, 110 + 22 * labels.length, {
      type: 'bar',
      data: {labels, datasets: datasets.filter((d) => d.data.length)},
      options: {
        indexAxis: 'y', grouped: false, barPercentage: 1, categoryPercentage: 0.85,
        scales: {x: axis('time in the step (s)', {type: 'linear', min: 0, max: span}),
                 y: {ticks: {autoSkip: false, font: {size: 10}}}},
        plugins: {tooltip: {callbacks: {label: (ctx) => {
          const [a, b] = ctx.raw.x;
          return `${ctx.dataset.label}: ${seconds(a)} to ${seconds(b)} (${seconds(b - a)})`;
        }}}},
      },
    }, bars);
    // The activations each rank holds over the same step (simulate's counter track): the line's
    // peak is the memory's worst moment, and the bars above say which pass made it.
    const held = (t.activations || []).filter((a) => a.points.length);
    if (!held.length) return;
    s.append(el('p', {className: 'caption', textContent: 'Activations held per rank over the ' +
      'step (GiB): each forward keeps its micro-batch\u2019s until the backward frees them.'}));
    chart(s, 240, {
      type: 'line',
      data: {datasets: held.map((a, i) => ({
        label: (several ? a.group + ' ' : '') + a.label, borderColor: color(i),
        backgroundColor: color(i), stepped: true, pointRadius: 0, borderWidth: 1.5,
        data: a.points.map(([x, y]) => ({x, y})),
      }))},
      options: {
        scales: {x: axis('time in the step (s)', {type: 'linear', min: 0, max: span}),
                 y: axis('activations held (GiB)', {beginAtZero: true})},
        plugins: {tooltip: {callbacks: {label: (ctx) => `${ctx.dataset.label}: ${ctx.raw.y.toFixed(2)} GiB at ${seconds(ctx.raw.x)}`}}},
      },
    }, held.reduce((n, a) => n + a.points.length, 0));
  }

  // ---- (4) predicted against measured ----
  const bandRatio = 0.10;  // the error band drawn around y = x
  function drawScatter(parent, sc) {
    const values = sc.points.flatMap((p) => [p[0], p[1]]).filter((v) => v > 0);
    const unit = sc.unit !== 'bytes' ? 1 : Math.max(...values) >= GiB ? GiB : MiB;
    const show = (v) => (sc.unit === 'bytes' ? bytes(v * unit) : seconds(v));
    const lo = Math.min(...values) / unit, hi = Math.max(...values) / unit;
    const log = hi / lo > 50;
    const line = (ratio, label) => ({
      type: 'line', label, data: [{x: lo, y: lo * ratio}, {x: hi, y: hi * ratio}],
      borderColor: ratio === 1 ? '#111827' : '#9ca3af', borderDash: ratio === 1 ? [] : [4, 4],
      borderWidth: 1, pointRadius: 0,
    });
    const datasets = sc.groups.map((g, i) => ({
      label: g, backgroundColor: color(i), pointRadius: 3,
      data: sc.points.filter((p) => p[2] === i).map((p) => ({x: p[1] / unit, y: p[0] / unit, label: p[3]})),
    }));
    datasets.push(line(1, 'predicted = measured'), line(1 + bandRatio, `\u00b1${100 * bandRatio}%`),
                  line(1 - bandRatio, ''));
    const scale = (title) => axis(title + (unit === GiB ? ' (GiB)' : unit === MiB ? ' (MiB)' : ' (s)'),
                                  log ? {type: 'logarithmic', ticks: logTicks(show)} : {});
    const row = el('div', {className: 'row'});
    parent.append(el('h3', {textContent: sc.title}), row);
    const left = el('div'), right = el('div');
    row.append(left, right);
    chart(left, 380, {
      type: 'scatter', data: {datasets},
      options: {
        scales: {x: scale('measured'), y: scale('predicted')},
        plugins: {
          legend: {labels: {filter: (item) => item.text !== ''}},
          tooltip: {callbacks: {label: (ctx) => ctx.raw.label === undefined ? '' :
            `${ctx.raw.label}: predicted ${show(ctx.raw.y)}, measured ${show(ctx.raw.x)} ` +
            `(${signedPercent(ctx.raw.y / ctx.raw.x - 1)})`}},
        },
      },
    }, sc.points.length);
    // The errors' distribution: predicted / measured - 1, in 5% bins, the tails gathered.
    const edges = [];
    for (let e = -50; e <= 50; e += 5) edges.push(e);
    const counts = new Array(edges.length + 1).fill(0);
    for (const p of sc.points) {
      const error = 100 * (p[0] / p[1] - 1);
      let bin = 0;
      while (bin < edges.length && error >= edges[bin]) bin++;
      counts[bin]++;
    }
    const binLabels = counts.map((_, i) => i === 0 ? `< ${edges[0]}%` : i === edges.length ?
      `\u2265 ${edges[edges.length - 1]}%` : `${edges[i - 1]}%`);
    chart(right, 380, {
      type: 'bar',
      data: {labels: binLabels, datasets: [{label: 'layouts or actions per error bin (predicted / measured - 1)',
                                            data: counts, backgroundColor: color(0)}]},
      options: {scales: {x: axis('error (bin start)'), y: axis('count', {beginAtZero: true})}},
    }, sc.points.length);
  }
  function drawAccuracy(a) {
    const s = section('Predicted against measured');
    for (const sc of a.scatters) drawScatter(s, sc);
    if (a.sets) {
      s.append(el('h3', {textContent: 'validate: step-time error per dataset'}));
      const pct = (v) => (v === null || v === undefined ? '-' : v.toFixed(1) + '%');
      s.append(sortableTable(a.sets.slice(), [
        {title: 'dataset', layout: true, value: (r) => r.name, text: (r) => r.name},
        {title: 'priced rows', value: (r) => r.priced_rows, text: (r) => r.priced_rows},
        {title: 'refused', value: (r) => r.refused_rows, text: (r) => r.refused_rows},
        {title: 'MAPE', value: (r) => r.mape_pct ?? 1e9, text: (r) => pct(r.mape_pct)},
        {title: 'median |error|', value: (r) => r.median_abs_pct ?? 1e9, text: (r) => pct(r.median_abs_pct)},
        {title: 'signed mean', value: (r) => r.signed_mean_pct ?? 1e9, text: (r) => pct(r.signed_mean_pct)},
      ]));
    }
  }

  // ---- (5) why this layout won ----
  function drawExplanation(x) {
    const s = section('Why ' + x.winner + ' won');
    for (const sentence of x.sentences) s.append(el('p', {textContent: sentence}));
    if (!x.deltas.length) return;
    chart(s, 60 + 26 * x.deltas.length, {
      type: 'bar',
      data: {labels: x.deltas.map((d) => d.label),
             datasets: [{label: 'step time against the winner\u2019s (s)', backgroundColor: color(1),
                         data: x.deltas.map((d) => d.delta_s)}]},
      options: {
        indexAxis: 'y',
        scales: {x: axis('slower by (s)', {beginAtZero: true})},
        plugins: {tooltip: {callbacks: {label: (ctx) =>
          `${x.deltas[ctx.dataIndex].layout}: +${seconds(ctx.raw)}`}}},
      },
    }, x.deltas.length);
  }

  function draw() {
    main = document.getElementById('report');
    const data = JSON.parse(document.getElementById('report-data').textContent);
    main.append(el('p', {className: 'inputs', textContent: 'From ' +
      data.inputs.map((i) => (i.file.includes(i.source) ? i.file : `${i.file} (${i.source})`)).join(', ') +
      '.'}));
    for (const n of data.notes) main.append(el('p', {className: 'note', textContent: 'Not shown: ' + n}));
    if (data.ranking) drawRanking(data.ranking);
    if (data.memory) drawMemory(data.memory);
    for (const t of data.timelines) drawTimeline(t);
    if (data.accuracy) drawAccuracy(data.accuracy);
    if (data.explanation) drawExplanation(data.explanation);
  }

  window.addEventListener('load', () => {
    const start = performance.now();
    try {
      draw();
    } catch (e) {
      fail('draw: ' + (e && e.stack ? e.stack.split('\n').slice(0, 2).join(' ') : e));
    }
    body.dataset.charts = charts.length;
    body.dataset.emptyCharts = charts.filter(([, points]) => points === 0).length;
    body.dataset.drawMs = Math.round(performance.now() - start);
    if (!errors.length) body.dataset.status = 'ok';
  });
})();
