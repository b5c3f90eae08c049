"""Library behind the book. Each module holds one idea; the chapters import from here."""
