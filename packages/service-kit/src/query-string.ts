import { parse, type ParsedUrlQuery } from 'node:querystring';

/**
 * A request's query string as its parameters, every one of them. Node's parser (Express's
 * default) stops at 1,000 and drops the rest without a word, so a filter after them was ignored
 * and the request answered unfiltered; an unknown parameter among them went unrefused. Node's
 * bound on a request's head (16 KB) bounds how many there can be.
 */
export function queryParameters(raw: string): ParsedUrlQuery {
  const parameters = parse(raw, '&', '=', { maxKeys: 0 });
  // A piece without a name (`&=&`, `=x`) names nothing, as an empty piece (`&&`) does.
  delete parameters[''];
  return parameters;
}
