/* At narrow widths a legend to the right of a plotly figure squeezes the plot to a sliver:
   there it moves to the foot of the figure (horizontal), the figure grows by the legend's
   height so the plot keeps its own, and all goes back when the page is wide again. */
(function () {
  var NARROW_PX = 600;

  function moveBelow(div, squeezed) {
    var wide = {legend: div.layout.legend || {}, height: div._fullLayout.height,
                marginBottom: div._fullLayout.margin.b, squeezed: squeezed,
                plotHeight: div._fullLayout.height - div._fullLayout.margin.t - div._fullLayout.margin.b};
    div.dataset.wideLegend = JSON.stringify(wide);
    return Plotly.relayout(div, {'legend.orientation': 'h', 'legend.x': 0, 'legend.xanchor': 'left',
                                 'legend.yref': 'container', 'legend.y': 0, 'legend.yanchor': 'bottom'})
      .then(function () {
        var box = div.querySelector('g.legend');
        var extra = box ? Math.ceil(box.getBBox().height) + 10 : 0;
        return Plotly.relayout(div, {height: wide.height + extra, 'margin.b': wide.marginBottom + extra, width: null});
      })
      .then(function () {
        // tick labels that wrap or turn at this width take height too: grow until the plot has its own
        var deficit = wide.plotHeight - div._fullLayout._size.h;
        if (deficit > 1 && wide.legend.orientation === 'h') return Plotly.relayout(div, {height: div._fullLayout.height + Math.ceil(deficit)});
      });
  }

  function moveBack(div) {
    var wide = JSON.parse(div.dataset.wideLegend);
    delete div.dataset.wideLegend;
    return Plotly.relayout(div, {legend: wide.legend, height: wide.height, 'margin.b': wide.marginBottom, width: null})
      .then(function () { return Plotly.Plots.resize(div); });
  }

  function place(div) {
    if (!window.Plotly || !div._fullLayout || !div._fullLayout.showlegend) return;
    var narrow = div.clientWidth < NARROW_PX;
    // a legend to the right that takes half the width squeezes the plot at any width
    var squeezed = div._fullLayout._size.w < 0.5 * div.clientWidth;
    if ((narrow || squeezed) && !div.dataset.wideLegend) {   // a horizontal legend too: narrow, it wraps into rows
      moveBelow(div, squeezed && !narrow);
    } else if (!narrow && div.dataset.wideLegend && !JSON.parse(div.dataset.wideLegend).squeezed) {
      moveBack(div);
    }
  }

  function placeAll() {
    document.querySelectorAll('.plotly-graph-div').forEach(place);
  }

  var timer = null;
  window.addEventListener('resize', function () { clearTimeout(timer); timer = setTimeout(placeAll, 150); });
  if (document.readyState === 'complete') { placeAll(); } else { window.addEventListener('load', placeAll); }
})();
