"""Table maintenance: snapshot expiry and the removal of files nothing references any more."""
