/* The book's tables that are wider than the column (book.css lets them scroll sideways in
   their box): the box is marked book-more-right while more of the table lies to its right and
   book-more-left while more lies to its left (book.css fades that edge), and a line under it
   says that it scrolls; again when the reader scrolls it and when its width changes. When every
   table is marked, html[data-tables-marked] is set (tests/test_browser.py waits for it). */
(function () {
  'use strict';
  var NOTE = 'The table scrolls sideways \u2192';
  function mark(box) {
    var more = box.scrollWidth - box.clientWidth > 1;
    box.classList.toggle('book-more-right', more && box.scrollLeft + box.clientWidth < box.scrollWidth - 1);
    box.classList.toggle('book-more-left', more && box.scrollLeft > 1);
    var next = box.nextElementSibling;
    if (more && !(next && next.classList.contains('book-scroll-note'))) {
      var note = document.createElement('p');
      note.className = 'book-scroll-note';
      note.textContent = NOTE;
      box.insertAdjacentElement('afterend', note);
    }
  }
  function boxes() {
    return [].slice.call(document.querySelectorAll('article .pst-scrollable-table-container, article table'))
      .filter(function (el) { return !(el.tagName === 'TABLE' && el.parentElement.classList.contains('pst-scrollable-table-container')); });
  }
  function start() {
    var all = boxes();
    all.forEach(function (box) {
      mark(box);
      box.addEventListener('scroll', function () { mark(box); }, {passive: true});
    });
    if (window.ResizeObserver) {
      var observer = new ResizeObserver(function (entries) {
        entries.forEach(function (entry) { var box = entry.target.closest('.pst-scrollable-table-container') || entry.target; mark(box); });
      });
      all.forEach(function (box) { observer.observe(box); var table = box.querySelector('table'); if (table) observer.observe(table); });
    }
    document.documentElement.dataset.tablesMarked = 'true';
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start); else start();
})();
