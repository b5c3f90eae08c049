/* The book's figures at the reader's width and in the reader's theme.

   The figure JSON is already in the book's style when the book is staged
   (lib/book/figure_style.py: fonts, transparent backgrounds, the legend horizontal below the
   plot, subplot titles marked). What only the page knows is done here, on load, again when the
   window is resized, and the colours again when the theme is toggled:

   - titles, subplot titles, axis titles and long legend entries are wrapped to the width they
     get at this screen size;
   - where the labels of two subplots (or a title and a subplot) still overlap, the gap between
     them grows (rows: the figure grows taller; columns: the plots get narrower), and text
     that reaches past the figure's edge gets margin;
   - the legend goes below everything else and the figure, and its box on the page, grow by its
     height, so that the plot keeps the height it was drawn with;
   - the figure takes the colours of the theme's mode (pydata-sphinx-theme's
     html[data-theme="dark"]): one plotly template per mode (its colour sequence, its text and
     mark colours) and every colour the chapter set mapped onto that mode, both as
     lib/book/figure_style.py staged them in layout.meta.bookColours (the staged figure is
     drawn in light mode); nothing is recoloured here by a rule of its own.

   When it is done with every figure of the page it sets html[data-figures-fitted]
   (tests/test_browser.py waits for it). */
(function () {
  'use strict';
  var SUBPLOT_TITLE = 'book-subplot-title';
  var GAP = 6;              // px kept between text boxes that were made to not overlap
  var TEXT = {light: '#222832', dark: '#d8dde4'};   // (when a figure carries no colours of its own)
  var STAGED_MODE = 'light';                          // the mode figure_style.py stages a figure in
  var FITS = 6;             // rounds of measuring and moving

  var measure = document.createElement('canvas').getContext('2d');
  function clone(x) { return x === undefined ? undefined : JSON.parse(JSON.stringify(x)); }
  function theme() { return document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light'; }
  function plain(text) { return String(text).replace(/<[^>]*>/g, ''); }
  function width(text, size, family) {
    measure.font = size + 'px ' + family;
    return measure.measureText(plain(text)).width;
  }

  /* `text` with <br> between words so that no line is wider than `room` px (its own breaks kept). */
  function wrap(text, room, size, family) {
    if (typeof text !== 'string' || !text || room <= 0) return text;
    return text.split(/<br\s*\/?>/i).map(function (line) {
      if (width(line, size, family) <= room) return line;
      var out = [], current = '';
      line.split(' ').forEach(function (word) {
        var trial = current ? current + ' ' + word : word;
        if (current && width(trial, size, family) > room) { out.push(current); current = word; }
        else current = trial;
      });
      if (current) out.push(current);
      return out.join('<br>');
    }).join('<br>');
  }

  function axisIds(layout) {
    return Object.keys(layout).filter(function (k) { return /^[xy]axis\d*$/.test(k); })
      .map(function (k) { return k[0] + k.slice(5); });
  }
  function axisKey(id) { return id[0] + 'axis' + id.slice(1); }

  /* The x and y domain of the subplot an axis belongs to. */
  function cellOf(layout, id) {
    var axis = layout[axisKey(id)] || {};
    if (axis.overlaying) return cellOf(layout, axis.overlaying);
    var other = axis.anchor && axis.anchor !== 'free' ? layout[axisKey(axis.anchor)] || {} : {};
    var own = axis.domain || [0, 1], across = other.domain || [0, 1];
    return id[0] === 'x' ? {x: own, y: across} : {x: across, y: own};
  }

  /* Every text of the figure that the reader reads as a label, with its box (relative to the
     figure's top left) and the subplot it belongs to (null: the figure's own). */
  function texts(div) {
    var origin = div.getBoundingClientRect(), layout = div._fullLayout, out = [];
    div.querySelectorAll('.main-svg text').forEach(function (t) {
      if (!t.textContent.trim() || t.closest('.hoverlayer, .textpoint, .trace, .plot')) return;
      var r = t.getBoundingClientRect();
      if (r.width < 1 || r.height < 1) return;
      var item = {el: t, left: r.left - origin.left, right: r.right - origin.left, top: r.top - origin.top,
                  bottom: r.bottom - origin.top, cell: null, kind: 'other'};
      var cls = t.getAttribute('class') || '', parent = t.parentNode.getAttribute('class') || '';
      var tick = /^([xy]\d*)tick2?$/.exec(parent), title = /^([xy]\d*)title$/.exec(cls);
      if (t.closest('.legend')) item.kind = 'legend';
      else if (t.closest('.slider-container, .updatemenu-container')) item.kind = 'control';
      else if (cls === 'gtitle') item.kind = 'title';
      else if (t.closest('.colorbar')) item.kind = 'colorbar';
      else if (tick || title) {
        item.kind = 'axis'; item.cell = cellOf(layout, (tick || title)[1]);
        if (tick) item.axis = tick[1];
      }
      else if (t.closest('.annotation')) {
        item.kind = 'annotation';
        var index = +t.closest('.annotation').getAttribute('data-index');
        var note = (layout.annotations || [])[index] || {};
        if (note.name === SUBPLOT_TITLE) {
          item.kind = 'subplot title';
          item.cell = {x: subplotDomain(layout, 'x', note.x, 'centre'), y: subplotDomain(layout, 'y', note.y, 'top')};
        } else if (/^x\d*/.test(note.xref || '') && /^y\d*/.test(note.yref || '')) {
          item.cell = cellOf(layout, note.xref.split(' ')[0]);
        }
      }
      out.push(item);
    });
    return out;
  }

  function subplotDomain(layout, letter, value, where) {
    var found = null;
    axisIds(layout).forEach(function (id) {
      var d = (layout[axisKey(id)] || {}).domain;
      if (id[0] !== letter || !d) return;
      var at = where === 'top' ? d[1] : (d[0] + d[1]) / 2;
      if (Math.abs(at - value) < 1e-4) found = d;
    });
    return found;
  }

  function overlapping(a, b) {
    return Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1.5
        && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1.5;
  }

  /* The gaps to add, in px, above rows and left of columns (keyed by the domain's start), so that
     no two texts of different subplots overlap; and the margins texts need. */
  function deficits(div) {
    var boxes = texts(div).filter(function (b) { return b.kind !== 'legend'; });
    var size = div._fullLayout._size, full = div._fullLayout;
    var need = {rows: {}, columns: {}, thin: {}, t: 0, b: 0, l: 0, r: 0, any: false};
    function add(table, key, amount) {
      if (amount > 0) { table[key] = Math.max(table[key] || 0, Math.ceil(amount)); need.any = true; }
    }
    for (var i = 0; i < boxes.length; i++) {
      for (var j = i + 1; j < boxes.length; j++) {
        var a = boxes[i], b = boxes[j];
        if (!overlapping(a, b)) continue;
        if (a.kind === 'title' || b.kind === 'title') {       // the title goes up: more top margin
          var title = a.kind === 'title' ? a : b, other = title === a ? b : a;
          need.t = Math.max(need.t, Math.ceil(title.bottom - other.top + GAP)); need.any = true;
          continue;
        }
        if (a.axis && a.axis === b.axis && a.kind === 'axis') {   // one axis's labels: fewer of them
          var axis = full[axisKey(a.axis)], set = div.layout[axisKey(a.axis)] || {};
          var count = boxes.filter(function (x) { return x.axis === a.axis; }).length;
          if (!axis || axis.tickmode === 'array' || (set.dtick === 1 && axis.type === 'log')) continue;
          if (axis.type === 'multicategory') {   // its group labels cannot be thinned: smaller, down to 8 px
            var font = (axis.tickfont || {}).size || 12;
            if (font > 8) need.thin[a.axis] = {'tickfont.size': font - 1};
            else need.wrapGroups = (need.wrapGroups || []).concat([a.axis]);   // then one word a line
          } else {
            need.thin[a.axis] = axis.type === 'log' ? {dtick: set.dtick === 'D2' ? 1 : 'D2'}
                                                    : {nticks: Math.max(2, Math.floor(count / 2))};
          }
          need.any = true;
          continue;
        }
        if (!a.cell || !b.cell) continue;
        if (a.cell.y[0] >= b.cell.y[1] - 1e-6 || b.cell.y[0] >= a.cell.y[1] - 1e-6) {   // different rows
          var upper = a.cell.y[0] >= b.cell.y[1] - 1e-6 ? a : b, lower = upper === a ? b : a;
          add(need.rows, lower.cell.y[1].toFixed(6), upper.bottom - lower.top + GAP);
        } else if (a.cell.x[1] <= b.cell.x[0] + 1e-6 || b.cell.x[1] <= a.cell.x[0] + 1e-6) {   // columns
          var left = a.cell.x[1] <= b.cell.x[0] + 1e-6 ? a : b, right = left === a ? b : a;
          add(need.columns, right.cell.x[0].toFixed(6), left.right - right.left + GAP);
        }
      }
    }
    // an axis label over the plot area of a subplot to its left or right (a long tick label under a
    // neighbouring heatmap): the gap between the two columns grows
    var areas = Object.keys(full._plots || {}).map(function (k) {
      var p = full._plots[k], x = p.xaxis, y = p.yaxis;
      return {left: x._offset, right: x._offset + x._length, top: y._offset, bottom: y._offset + y._length,
              cell: cellOf(full, x._id)};
    });
    boxes.forEach(function (b) {
      if (b.kind !== 'axis' || !b.cell) return;
      areas.forEach(function (area) {
        if (area.cell.x[0] === b.cell.x[0] || !overlapping(b, area)) return;
        if (area.cell.x[1] <= b.cell.x[0] + 1e-6) add(need.columns, b.cell.x[0].toFixed(6), area.right - b.left + GAP);
        else if (b.cell.x[1] <= area.cell.x[0] + 1e-6) add(need.columns, area.cell.x[0].toFixed(6), b.right - area.left + GAP);
      });
    });
    var W = full.width, H = full.height;
    boxes.forEach(function (b) {
      if (b.top < 0 && b.kind === 'title') {   // a title of several lines rises above its anchor: move it down
        need.titlePad = Math.ceil(((full.title.pad || {}).t || 0) - b.top + 2);
        need.t = Math.max(need.t, Math.ceil(-b.top + 2)); need.any = true;
      } else if (b.top < 0) { need.t = Math.max(need.t, Math.ceil(-b.top + 2)); need.any = true; }
      if (b.left < 0) { need.l = Math.max(need.l, Math.ceil(-b.left + 2)); need.any = true; }
      if (b.right > W) { need.r = Math.max(need.r, Math.ceil(b.right - W + 2)); need.any = true; }
      if (b.bottom > H) { need.b = Math.max(need.b, Math.ceil(b.bottom - H + 2)); need.any = true; }
    });
    return need;
  }

  /* A map of paper coordinates with `extra` px inserted before each interval's start (keyed by
     its start in paper units, measured from the top for rows and from the left for columns). */
  function stretch(extra, span, fromTop) {
    var marks = Object.keys(extra).map(function (k) { return {at: +k, px: extra[k]}; });
    var total = marks.reduce(function (s, m) { return s + m.px; }, 0);
    return {total: total, map: function (v) {
      var pos = fromTop ? (1 - v) * span : v * span, edge;
      marks.forEach(function (m) {
        edge = fromTop ? (1 - m.at) * span : m.at * span;
        if (edge <= pos + 1e-6) pos += m.px;
      });
      return fromTop ? 1 - pos / (span + total) : pos / (span + total);
    }};
  }

  /* The layout update that opens the gaps of `need` (rows: taller figure; columns: narrower
     plots) and adds the margins. */
  function opened(div, need) {
    var layout = div.layout, full = div._fullLayout, size = full._size, update = {};
    // columns widen their gaps at the plots' expense: by no more than a third of the width in all
    var asked = Object.keys(need.columns).reduce(function (sum, k) { return sum + need.columns[k]; }, 0);
    var room = size.w / 3 - (div._bookColumns || 0);
    if (asked > room) Object.keys(need.columns).forEach(function (k) { need.columns[k] *= Math.max(0, room) / asked; });
    div._bookColumns = (div._bookColumns || 0) + Math.min(asked, Math.max(0, room));
    var rows = stretch(need.rows, size.h, true), cols = stretch(need.columns, size.w, false);
    axisIds(layout).forEach(function (id) {
      var key = axisKey(id), d = (full[key] || {}).domain;
      if (!d || (layout[key] || {}).overlaying) return;
      var map = id[0] === 'y' ? rows.map : cols.map;
      var mapped = [map(d[0]), map(d[1])];
      // a domain's own start is where its gap goes: its top (rows) or left (columns) moves by it
      update[key + '.domain'] = mapped;
    });
    (layout.annotations || []).forEach(function (note, k) {
      if (note.yref === 'paper' && typeof note.y === 'number' && rows.total) update['annotations[' + k + '].y'] = rows.map(note.y);
      if (note.xref === 'paper' && typeof note.x === 'number' && cols.total) update['annotations[' + k + '].x'] = cols.map(note.x);
    });
    Object.keys(need.thin).forEach(function (id) {
      Object.keys(need.thin[id]).forEach(function (k) { update[axisKey(id) + '.' + k] = need.thin[id][k]; });
    });
    if (need.titlePad) update['title.pad.t'] = need.titlePad;
    var margin = clone(full.margin);
    margin.t += need.t; margin.b += need.b; margin.l += need.l; margin.r += need.r;
    update.margin = {t: margin.t, b: margin.b, l: margin.l, r: margin.r, pad: margin.pad || 0, autoexpand: true};
    update.height = full.height + rows.total + need.t + need.b;
    div._bookAdded += rows.total;
    return update;
  }

  function lowest(div, kinds) {   // the bottom of the figure's texts of other kinds, and its controls
    var origin = div.getBoundingClientRect(), size = div._fullLayout._size, bottom = size.t + size.h;
    texts(div).forEach(function (b) { if (kinds.indexOf(b.kind) < 0) bottom = Math.max(bottom, b.bottom); });
    div.querySelectorAll('.slider-container, .updatemenu-container, .colorbar').forEach(function (g) {
      var r = g.getBoundingClientRect();
      if (r.height > 0) bottom = Math.max(bottom, r.bottom - origin.top);
    });
    return bottom;
  }

  /* The figure in the colours of `mode`: its template changed as staged for the mode, then the
     layout's and the traces' own colours (layout.meta.bookColours[mode], written by
     lib/book/figure_style.py: {template: [[path, value]], layout: {attribute: value},
     data: [[attribute, [trace indices], [values]]]}). */
  function setPath(target, path, value) {
    path.slice(0, -1).forEach(function (key) {
      if (target[key] === undefined || target[key] === null) target[key] = typeof key === 'number' ? [] : {};
      target = target[key];
    });
    target[path[path.length - 1]] = value;
  }
  function colours(div, mode) {
    var book = div._book, staged = book.colours && book.colours[mode];
    if (!staged) return Plotly.relayout(div, {'font.color': TEXT[mode]});
    if (book.mode === mode) return Promise.resolve();
    var template = clone(book.template) || {};
    staged.template.forEach(function (change) { setPath(template, change[0], change[1]); });
    var update = Object.assign({template: template}, staged.layout);
    var done = Plotly.relayout(div, update);
    staged.data.forEach(function (group) {
      done = done.then(function () { var u = {}; u[group[0]] = group[2]; return Plotly.restyle(div, u, group[1]); });
    });
    return done.then(function () { book.mode = mode; });
  }

  /* Subplots in columns too narrow for their labels (under NARROW_CELL px each) as a grid of as
     many columns as fit at WIDE_CELL px (a row of subplots; GRID_CELL for a grid of several rows):
     on a phone a row becomes a column, the subplots one under the other. Returns the layout as
     if staged so and the plots' new total height; null when the figure has annotations on the
     paper other than subplot titles (they would not know where to go). */
  var NARROW_CELL = 180, WIDE_CELL = 200, GRID_CELL = 150, ROW_GAP = 80, COLUMN_GAP = 60;
  // how far (in paper units, across plus down) a subplot title may sit from its cell's top middle
  var SUBPLOT_TITLE_REACH = 0.5;
  function reflowed(base, plotW, plotH, data) {
    // a cell no trace is drawn in (a spare cell of make_subplots' grid) takes no place in the new grid
    var drawn = {};
    (data || []).forEach(function (t) { drawn[t.xaxis || 'x'] = true; });
    var ids = axisIds(base).filter(function (id) {
      var axis = base[axisKey(id)] || {};
      return !axis.overlaying && (!data || drawn[id[0] === 'x' ? id : (axis.anchor || 'x')]);
    });
    var cells = [], columns = {}, rows = {};
    ids.forEach(function (id) {
      var c = cellOf(base, id), key = c.x.join() + '|' + c.y.join();
      columns[c.x.join()] = true; rows[c.y.join()] = true;
      if (!cells.some(function (d) { return d.key === key; })) cells.push({key: key, x: c.x, y: c.y});
    });
    var n = cells.length, ncols = Object.keys(columns).length, nrows = Object.keys(rows).length;
    if (n < 2 || ncols < 2 || plotW / ncols >= NARROW_CELL) return null;
    if ((base.annotations || []).some(function (note) { return note.name !== SUBPLOT_TITLE && (note.xref === 'paper' || note.yref === 'paper'); }))
      return null;
    // reading order; a grid titled by column (its rows share the column's subject) column by column
    var titles = (base.annotations || []).filter(function (note) { return note.name === SUBPLOT_TITLE; }).length;
    var byColumn = nrows > 1 && titles <= ncols;
    cells.sort(function (a, b) {
      return byColumn ? (a.x[0] - b.x[0]) || (b.y[1] - a.y[1]) : (b.y[1] - a.y[1]) || (a.x[0] - b.x[0]); });
    var k = Math.max(1, Math.floor(plotW / (nrows > 1 ? GRID_CELL : WIDE_CELL))), r = Math.ceil(n / k);
    k = Math.ceil(n / r);
    if (k >= ncols) return null;
    var panel = Math.max(180, Math.min(plotH / nrows, 260)), total = r * panel + (r - 1) * ROW_GAP;
    var gap = COLUMN_GAP / plotW, width = (1 - (k - 1) * gap) / k, layout = clone(base);
    function xDomain(i) { var left = (i % k) * (width + gap); return [left, Math.min(1, left + width)]; }
    function yDomain(i) { var top = 1 - Math.floor(i / k) * (panel + ROW_GAP) / total; return [Math.max(0, top - panel / total), top]; }
    function index(c) { return cells.findIndex(function (d) { return d.key === c.x.join() + '|' + c.y.join(); }); }
    var yTitle = null;   // a row that shared its y axis: its title goes to each panel that starts a row
    if (nrows === 1) ids.forEach(function (id) { var t = (base[axisKey(id)].title || {}).text; if (id[0] === 'y' && t && !yTitle) yTitle = base[axisKey(id)].title; });
    ids.forEach(function (id) {
      var axis = layout[axisKey(id)], i = index(cellOf(base, id));
      axis.domain = id[0] === 'x' ? xDomain(i) : yDomain(i);
      if (id[0] === 'y') {
        axis.showticklabels = true;
        if (yTitle && !(axis.title || {}).text && i % k === 0) axis.title = clone(yTitle);
      }
    });
    (layout.annotations || []).forEach(function (note) {
      if (note.name !== SUBPLOT_TITLE) return;
      // the cell whose top middle is nearest the title (not an exact match: an axis constrained
      // to its table, constrain: 'domain', has had its domain shrunk by plotly since staging)
      var i = -1, best = SUBPLOT_TITLE_REACH;
      cells.forEach(function (c, k) {
        var far = Math.abs((c.x[0] + c.x[1]) / 2 - note.x) + Math.abs(c.y[1] - note.y);
        if (far < best) { best = far; i = k; } });
      if (i < 0) return;
      var d = xDomain(i);
      note.x = (d[0] + d[1]) / 2; note.y = yDomain(i)[1];
    });
    return {layout: layout, plotH: total};
  }

  /* Lay figure `div` out for its width, from the layout it was staged with. */
  function fit(div) {
    if (!div._fullLayout || !div.layout) return Promise.resolve();
    if (!div._book) div._book = {layout: clone(div.layout), data: div.data.map(function (t) {
      return {name: t.name, x: Array.isArray(t.x) && Array.isArray(t.x[0]) ? clone(t.x) : t.x}; }),
      template: clone(div.layout.template), colours: (div.layout.meta || {}).bookColours, mode: STAGED_MODE};
    var base = div._book.layout, full = div._fullLayout, mode = theme();
    var W = div.clientWidth, family = (base.font || {}).family || 'sans-serif';
    var margin = base.margin || {}, mt = margin.t || 60, mb = margin.b || 50, ml = margin.l || 60, mr = margin.r || 20;
    var height = base.height || 450, plotH = height - mt - mb;
    // the width the plots get: what the current drawing gives them (automargins included), scaled to this width
    var plotW = Math.min(W - ml - mr, full._size.w * W / Math.max(1, full.width));
    var update = {};
    div._bookAdded = 0; div._bookColumns = 0;
    var flow = reflowed(base, plotW, plotH, div.data);
    if (flow) { plotH = flow.plotH; base = flow.layout; }

    var title = base.title || {}, titleSize = (title.font || {}).size || 16;
    var titleText = wrap(title.text, W - 16, titleSize, family);
    var titleLines = titleText ? titleText.split('<br>').length : 0;
    if (titleText) { update['title.text'] = titleText; update['title.pad.t'] = (title.pad || {}).t || 0; }
    var top = Math.max(mt, titleLines ? Math.ceil(titleLines * titleSize * 1.3 + 16) : mt);
    update.margin = {t: top, b: mb, l: ml, r: mr, autoexpand: true};
    update.height = plotH + top + mb;

    (base.annotations || []).forEach(function (note, k) {
      var size = (note.font || {}).size || 12;
      if (note.name === SUBPLOT_TITLE) {
        var d = subplotDomain(base, 'x', note.x, 'centre') || [0, 1], room = (d[1] - d[0]) * plotW - 4;
        // a word wider than its subplot: a smaller font, down to 9 px
        var widest = Math.max.apply(null, plain(String(note.text).replace(/<br\s*\/?>/gi, ' ')).split(' ')
          .map(function (word) { return width(word, size, family); }));
        if (widest > room) size = Math.max(9, Math.floor(size * room / widest));
        update['annotations[' + k + '].font.size'] = size;
        update['annotations[' + k + '].text'] = wrap(note.text, room, size, family);
      } else if (note.xref === 'paper' && !note.textangle && typeof note.text === 'string') {
        update['annotations[' + k + '].text'] = wrap(note.text, plotW, size, family);
      }
      ['x', 'y'].forEach(function (c) { if (note[c] !== undefined) update['annotations[' + k + '].' + c] = note[c]; });
    });
    axisIds(base).forEach(function (id) {
      var axis = base[axisKey(id)], text = axis.title && axis.title.text;
      if (!axis.overlaying) update[axisKey(id) + '.domain'] = axis.domain || [0, 1];
      ['dtick', 'nticks', 'showticklabels', 'tickfont.size'].forEach(function (k) {
        var value = k.split('.').reduce(function (o, part) { return o === undefined ? o : o[part]; }, axis);
        update[axisKey(id) + '.' + k] = value === undefined ? null : value; });
      if (!text) return;
      var cell = cellOf(base, id), span = id[0] === 'x' ? (cell.x[1] - cell.x[0]) * plotW : (cell.y[1] - cell.y[0]) * plotH;
      update[axisKey(id) + '.title.text'] = wrap(text, span, ((axis.title.font || {}).size) || 13, family);
    });
    // the legend stays out while the plots are laid out (a long one would squeeze them), then goes below
    var hasLegend = div._book.legend = div._book.legend === undefined ? !!full.showlegend : div._book.legend;
    if (hasLegend) {
      update.showlegend = false;
      update.legend = Object.assign(clone(base.legend) || {}, {orientation: 'h', x: 0, xanchor: 'left', xref: 'container',
                                                                y: 0, yanchor: 'bottom', yref: 'container'});
    }
    var names = div._book.data.map(function (t) {
      return typeof t.name === 'string' ? wrap(t.name, W - 60, 12, family) : t.name; });

    var grouped = [], groups = [];   // traces on multicategory axes: their category groups as staged
    div._book.data.forEach(function (t, i) { if (Array.isArray(t.x) && Array.isArray(t.x[0])) { grouped.push(i); groups.push(t.x); } });
    return Plotly.restyle(div, {name: names})
      .then(function () { return grouped.length ? Plotly.restyle(div, {x: groups}, grouped) : null; })
      .then(function () { return Plotly.relayout(div, update); })
      .then(function () { return round(0); })
      .then(function () { return placeLegend(div, plotH + div._bookAdded); })
      .then(function () {   // the plot's new height can crowd ticks or move labels: once more
        var need = deficits(div);
        if (need.any) return round(0).then(function () { return placeLegend(div, plotH + div._bookAdded); });
      })
      .then(function () { return colours(div, mode); })
      .then(function () { div.style.height = div._fullLayout.height + 'px'; });

    function round(n) {
      var need = deficits(div);
      if (!need.any || n >= FITS) return Promise.resolve();
      var wrapped = Promise.resolve();
      if (need.wrapGroups) {
        var indices = [], xs = [];
        div.data.forEach(function (t, i) {
          if (need.wrapGroups.indexOf(t.xaxis || 'x') < 0 || !Array.isArray(t.x) || !Array.isArray(t.x[0])) return;
          indices.push(i);
          xs.push([t.x[0].map(function (v) { return String(v).replace(/ /g, '<br>'); })].concat(t.x.slice(1)));
        });
        if (indices.length) wrapped = Plotly.restyle(div, {x: xs}, indices);
      }
      return wrapped.then(function () { return Plotly.relayout(div, opened(div, need)); })
        .then(function () { return round(n + 1); });
    }
  }

  /* The legend below everything else; the figure grows by its height (and by what the plot area
     lost to margins that grew), so that the plot keeps its own. */
  function placeLegend(div, plotHeight) {
    var full = div._fullLayout, size = full._size;
    var grow = Math.max(0, Math.ceil(plotHeight - size.h));   // what the plot lost to margins that grew
    if (!div._book.legend) {
      return grow > 1 ? Plotly.relayout(div, {height: full.height + grow, 'margin.b': full.height - size.t - size.h})
                      : Promise.resolve();
    }
    var top = size.t, plot = size.h + grow;
    var under = lowest(div, ['legend']) - (size.t + size.h) + GAP;   // axis labels, controls below the plot
    function place(legendHeight) {
      var height = Math.ceil(top + plot + under + legendHeight + 4);
      return Plotly.relayout(div, {showlegend: true, height: height, 'margin.b': height - top - plot,
                                   'legend.y': 1 - (top + plot + under) / height, 'legend.yanchor': 'top'});
    }
    // first with room for one entry a row (a legend shown without room would squeeze the plot), then its own
    var entries = div.data.filter(function (t) { return t.showlegend !== false; }).length;
    return place(22 * entries + 10).then(function () {
      var legend = div.querySelector('g.legend');
      return legend ? place(legend.getBBox().height) : null;
    });
  }

  var busy = Promise.resolve();
  function fitAll() {
    var divs = [].slice.call(document.querySelectorAll('.plotly-graph-div'));
    delete document.documentElement.dataset.figuresFitted;
    busy = busy.then(function () {
      return divs.reduce(function (done, div) {
        return done.then(function () { return fit(div).catch(function (error) { console.warn('figure layout:', error); }); });
      }, Promise.resolve());
    }).then(function () { document.documentElement.dataset.figuresFitted = 'true'; });
    return busy;
  }
  function recolourAll() {
    var mode = theme();
    delete document.documentElement.dataset.figuresFitted;
    busy = busy.then(function () {
      return Promise.all([].slice.call(document.querySelectorAll('.plotly-graph-div'))
        .filter(function (div) { return div._book; }).map(function (div) { return colours(div, mode); }));
    }).then(function () { document.documentElement.dataset.figuresFitted = 'true'; });
  }

  var timer = null, lastWidth = window.innerWidth;
  window.addEventListener('resize', function () {
    if (window.innerWidth === lastWidth) return;   // a phone's toolbar hiding: only the height changed
    lastWidth = window.innerWidth;
    clearTimeout(timer); timer = setTimeout(fitAll, 200);
  });
  new MutationObserver(recolourAll).observe(document.documentElement, {attributes: true, attributeFilter: ['data-theme']});
  function start() { if (window.Plotly) fitAll(); else document.documentElement.dataset.figuresFitted = 'true'; }
  if (document.readyState === 'complete') start(); else window.addEventListener('load', start);
})();
