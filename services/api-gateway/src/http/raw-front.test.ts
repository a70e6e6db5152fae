import { parseRequestHead } from './raw-front';

const KEY = 'Authorization: Bearer sk_live_x';

describe('parseRequestHead (what the raw front takes; the rest goes to node:http)', () => {
  it('when a plain GET with a Host and a key comes, then it is taken with lower-case names and trimmed values', () => {
    expect(
      parseRequestHead(
        `GET /v1/signals?limit=2 HTTP/1.1\r\nHost: gw\r\n${KEY}\r\nAccept:  application/json \t`,
      ),
    ).toEqual({
      method: 'GET',
      url: '/v1/signals?limit=2',
      headers: { host: 'gw', authorization: 'Bearer sk_live_x', accept: 'application/json' },
      close: false,
    });
  });

  it('when there is no Authorization header, then it is taken (the API path answers 401; a session cookie is for the caller to judge)', () => {
    expect(parseRequestHead('GET /v1/x HTTP/1.1\r\nHost: gw\r\nCookie: a=b')).toMatchObject({
      headers: { host: 'gw', cookie: 'a=b' },
    });
  });

  it('when the client asks to close, or says keep-alive, or sends Content-Length 0, then it is taken', () => {
    expect(parseRequestHead(`HEAD /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}\r\nConnection: Close`)).toMatchObject({
      method: 'HEAD',
      close: true,
    });
    expect(
      parseRequestHead(
        `GET /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}\r\nConnection: keep-alive\r\nContent-Length: 0`,
      ),
    ).toMatchObject({ close: false });
  });

  it.each([
    ['a POST', `POST /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}`],
    ['OPTIONS', `OPTIONS /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}`],
    ['HTTP/1.0', `GET /v1/x HTTP/1.0\r\nHost: gw\r\n${KEY}`],
    ['HTTP/2 preface-like version', `GET /v1/x HTTP/2.0\r\nHost: gw\r\n${KEY}`],
    ['an absolute target', `GET http://gw/v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}`],
    ['a space in the target', `GET /v1/x y HTTP/1.1\r\nHost: gw\r\n${KEY}`],
    ['a byte above ASCII in the target', `GET /v1/caf\u00e9 HTTP/1.1\r\nHost: gw\r\n${KEY}`],
    ['two spaces after the method', `GET  /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}`],
    ['a lower-case method', `get /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}`],
    ['no Host', `GET /v1/x HTTP/1.1\r\n${KEY}`],
    ['Transfer-Encoding', `GET /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}\r\nTransfer-Encoding: chunked`],
    ['a Content-Length other than 0', `GET /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}\r\nContent-Length: 5`],
    ['Content-Length 00', `GET /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}\r\nContent-Length: 00`],
    ['Expect', `GET /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}\r\nExpect: 100-continue`],
    ['Upgrade', `GET /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}\r\nUpgrade: websocket`],
    ['Connection: upgrade', `GET /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}\r\nConnection: upgrade`],
    ['a header twice', `GET /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}\r\nHost: other`],
    ['a header twice in other case', `GET /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}\r\nauthorization: Bearer y`],
    ['a folded line', `GET /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}\r\n continued`],
    ['a line without a colon', `GET /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}\r\nnocolon`],
    ['an empty name', `GET /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}\r\n: v`],
    ['a space before the colon', `GET /v1/x HTTP/1.1\r\nHost : gw\r\n${KEY}`],
    ['a bare LF', `GET /v1/x HTTP/1.1\r\nHost: gw\nX: y\r\n${KEY}`],
    ['a bare CR', `GET /v1/x HTTP/1.1\r\nHost: gw\rX: y\r\n${KEY}`],
    ['a NUL in a value', `GET /v1/x HTTP/1.1\r\nHost: g\u0000w\r\n${KEY}`],
    ['a vertical tab a trim would hide', `GET /v1/x HTTP/1.1\r\nHost: gw\u000b\r\n${KEY}`],
    ['a byte above ASCII in a value', `GET /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}\r\nX-Name: caf\u00e9`],
    ['too many headers', `GET /v1/x HTTP/1.1\r\nHost: gw\r\n${KEY}${'\r\nX-A: 1'.repeat(64)}`],
  ])('when the head has %s, then node:http is to read it', (_what, head) => {
    expect(parseRequestHead(head)).toBeUndefined();
  });
});
