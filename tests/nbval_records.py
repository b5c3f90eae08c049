"""A pytest plugin for the nbval re-execution of `tests/test_notebooks.py`: compare what a record
shows, not the value behind it.

A recorded number displays a bundle (`lib.book.record.RECORD_MIME`) with its full-precision value
beside the plain text `key = text`. nbval compares every mime type of a `# NBVAL_CHECK_OUTPUT`
cell, so a last-bit difference between two runs of the same seed (a reduction summed in another
order) failed a cell whose shown number had not changed. With this plugin (`-p nbval_records`)
nbval skips the bundle and compares the text, at the precision the chapter states.
"""

from nbval.plugin import IPyNbFile

from lib.book.record import RECORD_MIME

_original_init = IPyNbFile.__init__


def _init_skipping_records(self, *args, **kwargs):
    _original_init(self, *args, **kwargs)
    self.skip_compare = self.skip_compare + (RECORD_MIME,)


IPyNbFile.__init__ = _init_skipping_records
