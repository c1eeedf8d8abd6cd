// Package e2e holds vplayer's end-to-end tests: real source and target servers, the real binary or
// the real stream in process, and row-by-row comparisons of the result.
package e2e
