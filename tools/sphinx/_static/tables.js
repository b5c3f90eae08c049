/* The book's tables and code blocks that are wider than the column (book.css lets them scroll
   sideways in their box): the box is marked book-more-right while more of the table lies to its right and
   book-more-left while more lies to its left (book.css fades that edge), and a line under it
   says that it scrolls; again when the reader scrolls it and when its width changes. When every
   table is marked, html[data-tables-marked] is set (tests/test_browser.py waits for it). */
(function () {
  'use strict';
  function note(box) {
    return (box.tagName === 'PRE' ? 'The code scrolls sideways' : 'The table scrolls sideways') + ' \u2192';
  }
  function mark(box) {
    var more = box.scrollWidth - box.clientWidth > 1;
    box.classList.toggle('book-more-right', more && box.scrollLeft + box.clientWidth < box.scrollWidth - 1);
    box.classList.toggle('book-more-left', more && box.scrollLeft > 1);
    var next = box.nextElementSibling;
    if (more && !(next && next.classList.contains('book-scroll-note'))) {
      var line = document.createElement('p');
      line.className = 'book-scroll-note';
      line.textContent = note(box);
      box.insertAdjacentElement('afterend', line);
    }
  }
  /* Every table's cells: a word that holds a digit or a hyphen ("1e-6", "7.719e-05", "->") is
     kept whole, so that a narrow column breaks lines between words and not inside a number at
     its hyphen ("7.719e-" over "05"). */
  var LONGEST_WHOLE = 16;   // a longer word (a step's name) may still break, or it would widen its column
  function keepNumbersWhole(cell) {
    var walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT), texts = [];
    while (walker.nextNode()) texts.push(walker.currentNode);
    texts.forEach(function (text) {
      var parts = text.nodeValue.split(/(\s+)/);
      if (!parts.some(function (part) { return /[\d-]/.test(part); })) return;
      var fragment = document.createDocumentFragment();
      parts.forEach(function (part) {
        if (/[\d-]/.test(part) && !/\s/.test(part) && part.length <= LONGEST_WHOLE) {
          var word = document.createElement('span');
          word.className = 'book-whole';
          word.textContent = part;
          fragment.appendChild(word);
        } else fragment.appendChild(document.createTextNode(part));
      });
      text.parentNode.replaceChild(fragment, text);
    });
  }
  function boxes() {
    return [].slice.call(document.querySelectorAll('article .pst-scrollable-table-container, article table, article div.highlight > pre'))
      .filter(function (el) { return !(el.tagName === 'TABLE' && el.parentElement.classList.contains('pst-scrollable-table-container')); });
  }
  function start() {
    [].forEach.call(document.querySelectorAll('article td'), keepNumbersWhole);
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
