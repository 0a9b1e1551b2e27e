// The portal's behaviour, served as /static/portal.js (the pages carry no
// inline script: the Content-Security-Policy admits scripts from the portal
// itself only). Each page opts in with a data attribute.
(function () {
  'use strict';

  // The page's one event stream (a browser gives a host few connections):
  // an inhabit tab's presence stream, which carries the world events too,
  // or else /api/v1/events, opened when a live part first asks.
  var stream = null;
  function worldEvents() {
    if (!stream) { stream = new EventSource('/api/v1/events'); }
    return stream;
  }

  function csrfToken() {
    var meta = document.querySelector('meta[name=csrf]');
    return meta ? meta.content : '';
  }

  // A live part of a page: fetched again from `url` whenever the world
  // moves, and replaced only when what it shows changed (so a field keeps
  // its focus and its text while other beings act), and never while
  // `busy()` says the person is in the middle of something there (the next
  // event brings what they missed).
  // Answers can arrive out of order: one older than the newest applied is
  // dropped, so a part never goes back to an earlier world.
  function refetchOnWorld(part, url, busy) {
    var shown = null; // the last HTML applied, as the portal sent it
    var asked = 0;
    var applied = 0;
    worldEvents().addEventListener('world', function () {
      if (busy && busy()) { return; }
      var mine = ++asked;
      fetch(url)
        .then(function (response) { return response.text(); })
        .then(function (html) {
          if (mine < applied) { return; }
          applied = mine;
          if (html === shown || (busy && busy())) { return; }
          part.innerHTML = html;
          shown = html;
        });
    });
  }

  // A conversation: not replaced while the person is in one of its fields.
  function followConversation(part) {
    var name = part.getAttribute('data-live-conversation');
    var url = '/beings/' + encodeURIComponent(name) + '/conversation' +
      (part.getAttribute('data-answer') === 'inhabit' ? '?answer=inhabit' : '');
    refetchOnWorld(part, url, function () {
      var active = document.activeElement;
      return part.contains(active) && active.tagName === 'INPUT';
    });
  }

  // An inhabit tab: its event stream holds the being while the tab is open.
  function holdPresence(state) {
    var name = state.getAttribute('data-presence');
    stream = new EventSource('/api/v1/beings/' + encodeURIComponent(name) + '/presence');
    stream.addEventListener('held', function (event) {
      state.textContent = 'You are driving @' + event.data + ' (its effective cognition is human).';
      state.className = 'ok';
    });
    stream.onerror = function () {
      if (stream.readyState !== EventSource.CLOSED) {
        state.textContent = 'connection lost; reconnecting';
        return;
      }
      // The stream was refused (a 403 when this person does not inhabit
      // the being): ask once more as a plain request to read why.
      state.textContent = 'not held';
      state.className = 'error';
      fetch('/api/v1/beings/' + encodeURIComponent(name) + '/presence', { headers: { accept: 'application/json' } })
        .then(function (response) { return response.json(); })
        .then(function (answer) {
          if (answer && answer.error) { state.textContent = answer.error.message; }
        })
        .catch(function () {});
    };
  }

  // The roleFlow page: what the being would wear with the flow as typed.
  function previewFlow(text) {
    var name = text.getAttribute('data-flow-preview');
    var verdict = document.getElementById('preview');
    var clauses = document.getElementById('preview-clauses');
    var warnings = document.getElementById('preview-warnings');
    var timer;
    function run() {
      fetch('/api/v1/beings/' + encodeURIComponent(name) + '/flow/preview', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': csrfToken() },
        body: JSON.stringify({ flowText: text.value })
      })
        .then(function (response) { return response.json(); })
        .then(function (answer) {
          clauses.innerHTML = '';
          warnings.innerHTML = '';
          if (answer.error) {
            verdict.textContent = answer.error.message;
            verdict.className = 'error';
            return;
          }
          verdict.className = '';
          verdict.textContent = 'In this moment it would wear: ' + (answer.primary || '(no role)') +
            ', stack [' + answer.stack.join(', ') + '], because:';
          answer.clauses.forEach(function (line) {
            var item = document.createElement('li');
            item.textContent = line;
            clauses.appendChild(item);
          });
          (answer.warnings || []).forEach(function (line) {
            var item = document.createElement('li');
            item.textContent = 'warning: ' + line;
            warnings.appendChild(item);
          });
        });
    }
    text.addEventListener('input', function () {
      clearTimeout(timer);
      timer = setTimeout(run, 200);
    });
    run();
  }

  // The role form's pickers: a chosen entry is added to its field's
  // comma-separated list (once).
  function pickInto(select) {
    select.addEventListener('change', function () {
      var field = document.getElementById(select.getAttribute('data-pick-into'));
      var entry = select.value;
      select.value = '';
      if (!field || !entry) { return; }
      var entries = field.value.split(',').map(function (e) { return e.trim(); }).filter(function (e) { return e; });
      if (entries.indexOf(entry) < 0) { entries.push(entry); }
      field.value = entries.join(', ');
      field.focus();
    });
  }

  document.addEventListener('DOMContentLoaded', function () {
    Array.prototype.forEach.call(document.querySelectorAll('[data-pick-into]'), pickInto);
    var live = document.querySelector('[data-live-world]');
    if (live) { refetchOnWorld(live, '/world/live'); }
    var state = document.querySelector('[data-presence]');
    if (state) { holdPresence(state); }
    var moments = document.querySelector('[data-live-moments]');
    if (moments) { refetchOnWorld(moments, moments.getAttribute('data-live-moments')); }
    var talk = document.querySelector('[data-live-conversation]');
    if (talk) { followConversation(talk); }
    var flow = document.querySelector('[data-flow-preview]');
    if (flow) { previewFlow(flow); }
  });
})();
