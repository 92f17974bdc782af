// toolgate console: refreshes the page's live part when its event stream says a call
// changed, and counts approval deadlines down. No framework; the server renders the HTML.
(function () {
  'use strict';
  var body = document.body;
  var live = document.getElementById('live');
  if (body.dataset.path && location.pathname !== body.dataset.path) {
    // A POST's answer: the address becomes the page's own, so refreshes read it.
    history.replaceState(null, '', body.dataset.path);
  }

  function fmt(ms) {
    var s = Math.ceil(ms / 1000), h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
    s = s % 60;
    return (h ? h + 'h' : '') + (h || m ? m + 'm' : '') + s + 's';
  }
  function tick() {
    document.querySelectorAll('[data-deadline]').forEach(function (el) {
      var ms = Date.parse(el.dataset.deadline) - Date.now();
      el.textContent = ms > 0 ? 'in ' + fmt(ms) : 'passed';
    });
  }

  // Reasons being typed survive a refresh.
  function saveInputs() {
    var saved = {};
    live.querySelectorAll('form input[name=reason]').forEach(function (el) {
      saved[el.form.getAttribute('action')] = {value: el.value, focus: el === document.activeElement};
    });
    return saved;
  }
  function restoreInputs(saved) {
    live.querySelectorAll('form input[name=reason]').forEach(function (el) {
      var s = saved[el.form.getAttribute('action')];
      if (s) {
        el.value = s.value;
        if (s.focus) { el.focus(); }
      }
    });
  }

  var busy = false, again = false, timer = null;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    var u = new URL(location.href);
    u.searchParams.set('fragment', '1');
    fetch(u, {credentials: 'same-origin'}).then(function (r) {
      if (r.status === 401 || r.redirected) { location.reload(); return null; }
      return r.text();
    }).then(function (html) {
      if (html === null) { return; }
      var saved = saveInputs();
      live.innerHTML = html;
      restoreInputs(saved);
      tick();
      body.dataset.refreshed = String(Number(body.dataset.refreshed || 0) + 1);
    }).catch(function () { again = true; }).finally(function () {
      busy = false;
      if (again) { again = false; soon(); }
    });
  }
  function soon() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 100);
  }

  tick();
  setInterval(tick, 1000);
  if (body.dataset.events && window.EventSource) {
    var es = new EventSource(body.dataset.events);
    es.addEventListener('change', soon);
    // Opening (and every reconnect) refreshes: changes before the watch began count too.
    es.onopen = function () { body.dataset.live = 'open'; soon(); };
    es.onerror = function () { body.dataset.live = 'reconnecting'; };
  }
})();
