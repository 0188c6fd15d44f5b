// Package secret keeps credentials out of everything antidrift records or
// prints. It redacts URLs (user info and query values: base URLs such as
// http://user:PASSWORD@host/v1?token=T), free text holding URLs (errors,
// progress lines), recorded command lines, and recognises an API key given
// where the name of an environment variable was expected.
//
// It owns no I/O and imports only the standard library; every package that
// records or prints a URL goes through it.
package secret
