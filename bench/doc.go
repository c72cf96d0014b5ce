// Package bench is Switchboard's load generator and benchmark harness, run by
// `switchboard bench` (`make bench`): it generates a synthetic market (engine/synth), seeds
// it into a throwaway PostgreSQL with COPY, starts `switchboard serve` as a child process,
// drives closed- and open-loop load over loopback with a fasthttp client, measures the floor
// (a minimal fasthttp server answering a body of the same size), times the engine's
// matching in-process at 1k/10k/100k campaigns, and writes docs/performance.md with SVG
// charts. See bench/README.md.
package bench
