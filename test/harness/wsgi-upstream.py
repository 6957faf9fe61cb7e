# A WSGI upstream on Python's own wsgiref server, for tests that need a non-Node service behind the
# sidecar: it routes on PATH_INFO as wsgiref decodes it (percent-escapes, %2F included) and names
# the handler that ran in an x-handler header ("strict" for /api/admin and below, else "loose").
# The body is JSON with the path and HTTP_USER_ID, the identity a WSGI/CGI service reads.
# Usage: python3 wsgi-upstream.py PORT
import json
import sys
from wsgiref.simple_server import WSGIRequestHandler, make_server


def app(environ, start_response):
    path = environ.get('PATH_INFO', '')
    strict = path == '/api/admin' or path.startswith('/api/admin/')
    body = json.dumps({'path': path, 'userId': environ.get('HTTP_USER_ID')}).encode('utf-8')
    start_response('200 OK', [
        ('content-type', 'application/json'),
        ('content-length', str(len(body))),
        ('x-handler', 'strict' if strict else 'loose'),
    ])
    return [b''] if environ['REQUEST_METHOD'] == 'HEAD' else [body]


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):
        pass


server = make_server('127.0.0.1', int(sys.argv[1]), app, handler_class=QuietHandler)
print('wsgi upstream listening', flush=True)
server.serve_forever()
