// In-page helpers for tests/browser/test_lab_browser.py, installed as window.__bt.
// They read JupyterLab's notebook model (window.jupyterapp, exposed by the server flag
// --LabApp.expose_app_in_browser) and the DOM: output areas, ipympl canvases, widgets.
(() => {
  const current = () => window.jupyterapp.shell.currentWidget;

  // FNV-1a over every RGBA pixel of a canvas; `blank` when nothing was drawn yet.
  function hashCanvas(c) {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const u = new Uint32Array(d.buffer, d.byteOffset, d.byteLength >> 2);
    let h = 2166136261 >>> 0, first = u.length ? u[0] : 0, uniform = true;
    for (let i = 0; i < u.length; i++) {
      const v = u[i];
      if (v !== first) uniform = false;
      h = Math.imul(h ^ v, 16777619) >>> 0;
    }
    return {hash: h.toString(16) + ':' + c.width + 'x' + c.height, blank: uniform};
  }

  // What a student sees change: the figure canvases, and (separately) any other output text.
  function state(area) {
    const canv = [], other = [];
    let blank = false;
    for (const c of area.querySelectorAll('.jupyter-matplotlib canvas')) {
      if (!c.width || !c.height || c.style.zIndex === '1') continue;   // z-index 1: rubber band layer
      const s = hashCanvas(c);
      canv.push(s.hash);
      blank = blank || s.blank;
    }
    for (const im of area.querySelectorAll('img')) other.push(im.currentSrc || im.src);
    for (const t of area.querySelectorAll('.widget-html-content, .jp-RenderedText, .jp-RenderedHTMLCommon')) {
      other.push(t.textContent);
    }
    return {canvas: canv.join('|'), other: other.join('|'), blank, n_canvas: canv.length};
  }

  function topLevelOutputs(node) {
    return [...node.querySelectorAll('.jp-OutputArea-output')]
      .filter(o => !o.parentElement.closest('.jp-OutputArea-output'));
  }

  const visible = e => !!(e.offsetParent || e.getClientRects().length);

  function label(el, sel) {
    const l = el.querySelector(sel);
    return l ? l.textContent.trim() : '';
  }

  function controlsOf(area, pi) {
    const out = [];
    const add = (el, kind, name) => {
      const id = `${pi}-${out.length}`;
      el.setAttribute('data-bt-ctl', id);
      out.push({id, kind, label: name || kind});
    };
    for (const s of area.querySelectorAll('.widget-slider')) {
      // a disabled control (Panel.relevance: it cannot matter now) is not exercised
      if (visible(s) && s.querySelector('.noUi-handle') && !s.querySelector('.noUi-target[disabled]'))
        add(s, 'slider', label(s, '.widget-label'));
    }
    for (const d of area.querySelectorAll('.widget-dropdown')) {
      const sel = d.querySelector('select');
      if (visible(d) && sel && sel.options.length > 1 && !sel.disabled) add(d, 'dropdown', label(d, '.widget-label'));
    }
    for (const c of area.querySelectorAll('.widget-checkbox')) {
      const inp = c.querySelector('input[type=checkbox]');
      if (visible(c) && inp && !inp.disabled) add(c, 'checkbox', c.textContent.replace(/\u200b/g, '').trim());
    }
    for (const t of area.querySelectorAll('.widget-toggle-buttons')) {
      if (visible(t) && t.querySelectorAll('button').length > 1 &&
          ![...t.querySelectorAll('button')].every(b => b.disabled)) {
        add(t, 'toggle-buttons', label(t, '.widget-label') ||
            [...t.querySelectorAll('button')].map(b => b.textContent.trim()).join('/'));
      }
    }
    for (const b of area.querySelectorAll('button.widget-toggle-button')) {
      if (visible(b) && !b.closest('.widget-toggle-buttons') && !b.disabled) add(b, 'toggle', b.textContent.trim());
    }
    return out;
  }

  window.__bt = {
    state,

    // Kernel status, per code cell its execution count, errors and stderr, and DOM checks.
    runState() {
      const w = current();
      if (!w || !w.content || !w.content.model) return {ready: false};
      const cells = [];
      w.content.widgets.forEach((cell, i) => {
        const m = cell.model;
        if (m.type !== 'code') return;
        const outs = m.outputs.toJSON();
        cells.push({
          index: i,
          empty: !m.sharedModel.getSource().trim(),
          count: m.executionCount,
          errors: outs.filter(o => o.output_type === 'error')
            .map(o => `${o.ename}: ${o.evalue}\n${(o.traceback || []).join('\n')}`),
          widgets: outs.filter(o => o.data && o.data['application/vnd.jupyter.widget-view+json'])
            .map(o => o.data['application/vnd.jupyter.widget-view+json'].model_id),
          stderr: outs.filter(o => o.output_type === 'stream' && o.name === 'stderr')
            .map(o => Array.isArray(o.text) ? o.text.join('') : o.text),
        });
      });
      const node = w.content.node;
      const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
      // every drawn ipympl canvas, keyed by cell and order: live updates during run-all
      const figs = [];
      w.content.widgets.forEach((cell, i) => {
        cell.node.querySelectorAll('.jupyter-matplotlib canvas').forEach((c, j) => {
          if (!c.width || !c.height || c.style.zIndex === '1') return;
          const h = hashCanvas(c);
          if (!h.blank) figs.push([`${i}:${j}`, h.hash]);
        });
      });
      return {
        ready: true,
        kernel: kernel ? kernel.status : 'none',
        connection: kernel ? kernel.connectionStatus : 'none',
        figs,
        cells,
        running: [...node.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('*')),
        domStderr: [...node.querySelectorAll(
          '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
          .map(e => e.textContent.slice(0, 3000)),
      };
    },

    // Widget outputs still "Loading widget…" or showing an error instead of the widget.
    widgetProblems() {
      const node = current().content.node;
      const problems = [], pending = [];
      for (const o of node.querySelectorAll(
        '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.widget-view+json"]')) {
        const text = o.textContent || '';
        if (/Error (displaying|rendering) widget|model not found/i.test(text)) problems.push(text.slice(0, 300));
        else if (!o.querySelector('.jupyter-widgets')) pending.push(text.slice(0, 100));
      }
      for (const f of node.querySelectorAll('.jupyter-matplotlib')) {
        const c = f.querySelector('canvas');
        if (!c || !c.width || hashCanvas(c).blank) pending.push('ipympl canvas not drawn yet');
      }
      return {problems, pending};
    },

    // Tag every displayed output that holds widget controls or an ipympl figure as a panel.
    discover() {
      document.querySelectorAll('[data-bt-panel]').forEach(e => e.removeAttribute('data-bt-panel'));
      document.querySelectorAll('[data-bt-ctl]').forEach(e => e.removeAttribute('data-bt-ctl'));
      const panels = [];
      current().content.widgets.forEach((cell, ci) => {
        if (cell.model.type !== 'code') return;
        for (const out of topLevelOutputs(cell.node)) {
          const figures = out.querySelectorAll('.jupyter-matplotlib').length;
          const hasCtl = out.querySelector('.widget-slider, .widget-dropdown, .widget-checkbox, .widget-toggle-button');
          if (!figures && !hasCtl) continue;
          const pi = panels.length;
          out.setAttribute('data-bt-panel', String(pi));
          const lines = cell.model.sharedModel.getSource().trim().split('\n');
          // figure widths vs the room the output area has (wider figures are cut off / scroll)
          const figPx = [...out.querySelectorAll('.jupyter-matplotlib-canvas-div')]
            .map(d => Math.round(d.getBoundingClientRect().width));
          panels.push({index: pi, cell: ci, name: lines[lines.length - 1].trim().slice(0, 40),
                       figures, fig_px: figPx, area_px: Math.round(out.getBoundingClientRect().width),
                       controls: controlsOf(out, pi)});
        }
      });
      return panels;
    },

    // Resolve once the panel's output has not changed for quietMs (or after maxMs).
    waitStable(pi, quietMs, maxMs) {
      const area = document.querySelector(`[data-bt-panel="${pi}"]`);
      return new Promise(resolve => {
        const t0 = performance.now();
        let last = JSON.stringify(state(area)), since = t0;
        const tick = () => {
          const now = performance.now(), s = JSON.stringify(state(area));
          if (s !== last) { last = s; since = now; }
          if (now - since >= quietMs) return resolve({stable: true, ms: now - t0});
          if (now - t0 >= maxMs) return resolve({stable: false, ms: now - t0});
          setTimeout(tick, 20);
        };
        tick();
      });
    },

    // Arm a probe: time of the next user event in the panel (key press, change), and the
    // first animation frame at which its canvas pixels (or, without a canvas, its other
    // output) differ from now.
    probe(pi, limitMs) {
      const area = document.querySelector(`[data-bt-panel="${pi}"]`);
      const base = state(area);
      const p = {tEvent: null, tChange: null, what: null, otherChanged: false, timedOut: false};
      window.__btProbe = p;
      const mark = () => { if (p.tEvent === null) p.tEvent = performance.now(); };
      for (const ev of ['keydown', 'change', 'click']) area.addEventListener(ev, mark, {capture: true, once: true});
      const t0 = performance.now();
      const loop = () => {
        if (window.__btProbe !== p) return;
        const s = state(area);
        if (s.other !== base.other) p.otherChanged = true;
        if (base.n_canvas ? s.canvas !== base.canvas : s.other !== base.other) {
          p.tChange = performance.now();
          p.what = base.n_canvas ? 'canvas' : 'output';
          return;
        }
        if (performance.now() - t0 > limitMs) { p.timedOut = true; return; }
        requestAnimationFrame(loop);
      };
      requestAnimationFrame(loop);
      return base.n_canvas;
    },
  };
})();
