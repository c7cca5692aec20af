"""A browser for the conformance suite's OAuth scenarios, which need no person to sign in:
opens the sign-in page and follows its redirects back to wonopcode's listener."""
import sys
import urllib.request

urllib.request.urlopen(sys.argv[-1], timeout=30).read()
