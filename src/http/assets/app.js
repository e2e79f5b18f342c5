// The dashboard's own script: the overview's live charts and counts, fed by
// server-sent events from /events, list pages that fetch their visible rows
// again as those counts move, and a job page that follows its job's
// transitions (/jobs/:id/events) and has htmx fetch the page again on each.
// It writes only text (textContent) and numbers into the page; markup comes
// only from this server's own pages, swapped in by htmx. Loaded from this
// origin; the page's Content-Security-Policy allows no inline script.
'use strict';

(function () {
  const SERIES = {
    enqueued: { label: 'enqueued', stroke: '#2563eb' },
    completed: { label: 'completed', stroke: '#16a34a' },
    failed: { label: 'failed', stroke: '#ea580c' },
    dead: { label: 'dead', stroke: '#dc2626' },
    oldestPendingAge: { label: 'oldest pending, s', stroke: '#7c3aed' },
  };

  function fmt(n) {
    if (n === null || n === undefined) return '–';
    return n >= 100 ? Math.round(n).toLocaleString('en-US') : (Math.round(n * 10) / 10).toLocaleString('en-US');
  }

  function makeChart(el, names) {
    const data = [[]].concat(names.map(() => []));
    const opts = {
      width: Math.max(240, el.clientWidth),
      height: 200,
      cursor: { drag: { x: false, y: false } },
      legend: { live: true },
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [
        { stroke: '#6b7280', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#e5e7eb' } },
        {
          stroke: '#6b7280',
          grid: { stroke: '#eef0f3' },
          ticks: { stroke: '#e5e7eb' },
          size: 56,
          values: (u, vals) => vals.map(fmt),
        },
      ],
      series: [{}].concat(
        names.map((name) => ({
          label: SERIES[name].label,
          stroke: SERIES[name].stroke,
          width: 2,
          points: { show: false },
          value: (u, v) => fmt(v),
        })),
      ),
    };
    const plot = new uPlot(opts, data, el);
    return { el, names, data, plot };
  }

  function push(chart, sample) {
    chart.data[0].push(sample.t);
    chart.names.forEach((name, i) => chart.data[i + 1].push(sample[name]));
    // The server keeps an hour; so does the chart.
    const cutoff = sample.t - 3600;
    while (chart.data[0].length > 0 && chart.data[0][0] < cutoff) chart.data.forEach((column) => column.shift());
  }

  function setCounts(counts) {
    for (const [name, value] of Object.entries(counts)) {
      const el = document.querySelector('[data-count="' + name + '"]');
      if (el !== null) el.textContent = value.toLocaleString('en-US');
    }
  }

  function setLive(state, text) {
    const live = document.getElementById('live');
    const label = document.getElementById('live-text');
    if (live === null || label === null) return;
    live.dataset.state = state;
    label.textContent = text;
  }

  function startOverview() {
    const boxes = Array.from(document.querySelectorAll('.chart[data-series]'));
    if (boxes.length === 0 || typeof EventSource === 'undefined') return;
    let charts = [];
    const events = new EventSource('/events');
    events.addEventListener('snapshot', (message) => {
      const { history, counts } = JSON.parse(message.data);
      charts.forEach((chart) => chart.plot.destroy());
      charts = boxes.map((el) => makeChart(el, el.dataset.series.split(' ')));
      for (const sample of history) charts.forEach((chart) => push(chart, sample));
      charts.forEach((chart) => chart.plot.setData(chart.data));
      setCounts(counts);
      setLive('live', 'live');
    });
    events.addEventListener('sample', (message) => {
      const { sample, counts } = JSON.parse(message.data);
      if (sample !== null) {
        charts.forEach((chart) => {
          push(chart, sample);
          chart.plot.setData(chart.data);
        });
      }
      setCounts(counts);
      setLive('live', 'live · updated ' + new Date().toLocaleTimeString());
    });
    events.addEventListener('error', () => setLive('offline', 'reconnecting…'));
    window.addEventListener('resize', () =>
      charts.forEach((chart) => chart.plot.setSize({ width: Math.max(240, chart.el.clientWidth), height: 200 })),
    );
  }

  // Fetch this page again and swap in its element `id`, when `ready()` says so: one fetch at a
  // time, and calls during a fetch cost one more fetch, not one each; `swapped` runs after each.
  function coalescedSwap(id, ready, swapped) {
    let fetching = false;
    let again = false;
    const refresh = () => {
      if (!ready()) return;
      if (fetching) {
        again = true;
        return;
      }
      fetching = true;
      const done = () => {
        fetching = false;
        swapped();
        if (again) {
          again = false;
          refresh();
        }
      };
      htmx
        .ajax('GET', location.pathname + location.search, { target: '#' + id, select: '#' + id, swap: 'outerHTML' })
        .then(done, done);
    };
    return refresh;
  }

  // A job page: each transition of the job (a heartbeat, progress, the completion) fetches the page
  // again and swaps its body in; transitions that come during a fetch cost one more fetch, not one each.
  function startJobLive() {
    const root = document.getElementById('job-live');
    if (root === null || root.dataset.events === undefined) return;
    if (typeof EventSource === 'undefined' || typeof htmx === 'undefined') return;
    let status = ['connecting', 'connecting…'];
    const show = (state, text) => {
      status = [state, text];
      setLive(state, text);
    };
    // The swapped-in page carries a fresh indicator; it says what this stream knows.
    const refresh = coalescedSwap(
      'job-live',
      () => true,
      () => setLive(status[0], status[1]),
    );
    const events = new EventSource(root.dataset.events);
    events.addEventListener('open', () => show('live', 'live'));
    events.addEventListener('transition', (message) => {
      const { transition } = JSON.parse(message.data);
      show('live', 'live · ' + transition + ' at ' + new Date().toLocaleTimeString());
      refresh();
    });
    events.addEventListener('error', () => show('offline', 'reconnecting…'));
  }

  // A list page (Jobs, Leases, Schedules): the overview's stream says, once per sample, what the
  // viewer's counts are; the part marked data-live (the visible page of rows, never more) is fetched
  // again when they changed, or on every sample where data-live says so. One fetch at a time, and a
  // sample during a fetch costs one more fetch, not one each; none while the operator is typing in it.
  function startListLive() {
    const marked = document.querySelector('[data-live]');
    if (marked === null || marked.id === '') return;
    if (typeof EventSource === 'undefined' || typeof htmx === 'undefined') return;
    const id = marked.id;
    let counts = null;
    const busy = (root) =>
      root.contains(document.activeElement) && /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName);
    const refresh = coalescedSwap(
      id,
      () => {
        const root = document.getElementById(id);
        // A refused filter shows its message in place of the rows: nothing live to fetch until it is fixed.
        return root !== null && root.dataset.live !== undefined && !busy(root);
      },
      () => undefined,
    );
    const events = new EventSource('/events');
    events.addEventListener('snapshot', (message) => {
      counts = JSON.stringify(JSON.parse(message.data).counts);
      setLive('live', 'live');
    });
    events.addEventListener('sample', (message) => {
      const now = JSON.stringify(JSON.parse(message.data).counts);
      const root = document.getElementById(id);
      const changed = now !== counts;
      counts = now;
      setLive('live', 'live · updated ' + new Date().toLocaleTimeString());
      if (root !== null && (changed || root.dataset.live === 'every-sample')) refresh();
    });
    events.addEventListener('error', () => setLive('offline', 'reconnecting…'));
  }

  // A filter the server refused answers 400 with its message where the rows go. htmx keeps the old
  // rows on an error status, which reads as if the filter applied: swap the message in instead.
  document.addEventListener('htmx:beforeSwap', (event) => {
    const target = event.detail.target;
    if (event.detail.xhr.status === 400 && target !== null && target.id === 'results') {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  // An action that cannot be taken back as it was, or changes more than one job, asks first: its
  // form carries the question in data-confirm. Without script the form posts as before.
  document.addEventListener('submit', (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || form.dataset.confirm === undefined) return;
    if (!window.confirm(form.dataset.confirm)) event.preventDefault();
  });

  function start() {
    startOverview();
    startJobLive();
    startListLive();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
