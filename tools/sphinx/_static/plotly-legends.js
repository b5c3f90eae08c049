/* At narrow widths a legend to the right of a plotly figure squeezes the plot to a sliver:
   there it moves below the plot (horizontal), and back when the page is wide again. */
(function () {
  var NARROW_PX = 600;

  function place(div) {
    if (!window.Plotly || !div._fullLayout || !div._fullLayout.showlegend) return;
    var narrow = div.clientWidth < NARROW_PX;
    if (narrow && !div.dataset.wideLegend) {
      if ((div.layout.legend || {}).orientation === 'h') return;
      div.dataset.wideLegend = JSON.stringify(div.layout.legend || {});
      Plotly.relayout(div, {'legend.orientation': 'h', 'legend.x': 0, 'legend.xanchor': 'left',
                            'legend.y': -0.2, 'legend.yanchor': 'top', 'legend.yref': 'paper'});
    } else if (!narrow && div.dataset.wideLegend) {
      var legend = JSON.parse(div.dataset.wideLegend);
      delete div.dataset.wideLegend;
      Plotly.relayout(div, {legend: legend});
    }
  }

  function placeAll() {
    document.querySelectorAll('.plotly-graph-div').forEach(place);
  }

  var timer = null;
  window.addEventListener('resize', function () { clearTimeout(timer); timer = setTimeout(placeAll, 150); });
  if (document.readyState === 'complete') { placeAll(); } else { window.addEventListener('load', placeAll); }
})();
