// Package config owns agenthost's configuration: the Config type and its
// defaults, loading it from one YAML file, the environment and command-line
// overrides (in that order of precedence, lowest first, merged with koanf),
// strict validation with messages that name the key, where it was set and
// what to do, and watching the file for changes. It starts nothing.
//
// Layers, lowest precedence first:
//
//  1. built-in defaults (Default);
//  2. the YAML file (DefaultPath unless another is given);
//  3. environment variables AGENTHOST_<KEY>, where <KEY> is the dotted key
//     upper-cased with dots as underscores (AGENTHOST_SERVER_TOKEN_FILE sets
//     server.token_file); lists are comma-separated; entries of free-form
//     maps cannot be set this way. EnvConfigPath, EnvPluginPrefix* and
//     EnvAudioVerbose are read elsewhere and skipped; any other unknown
//     AGENTHOST_ variable is an error;
//  4. overrides: a map of dotted keys ("server.address") to values, built by
//     the CLI (see ParseSets).
//
// Strictness: an unknown key, a value of the wrong type or a value out of
// range is an error. Load reports every problem at once, one line each, with
// the file and line (or environment variable) it came from and, for typos,
// the closest valid key. Free-form subtrees are exempt from the unknown-key
// check: extra server.params, services.timeouts, services.prefixes,
// plugins.sha256, plugins.config, conversation.hooks (whose keys must still be
// known events) and unknown fields inside an mcp.servers entry.
//
// A top-level mcpServers key is accepted as an alias of mcp.servers, so an
// MCP client's server list can be pasted in as is; a server's timeout may be
// a number of seconds there, as those clients write it, and other clients'
// keys draw a warning and are ignored.
//
// Keys that earlier versions had and nothing reads any more (conversation.vad)
// draw a warning in the file and are dropped, so an old file still loads.
//
// Opus limits audio.rate and audio.frame to OpusRates and OpusFrames when
// either direction (server.params.format, input_audio_format) uses it.
//
// Secrets (server.token, the token file's contents, MCP header and env values)
// never appear in error messages, warnings or Redacted output.
//
// The file is parsed once, into a yaml.Node that gives every key its line
// and decodes into the map koanf merges. The merged tree is then decoded by
// decode.go rather than by koanf's UnmarshalWithConf (mapstructure). That
// decoder earns its 300 lines: it reports every problem of one load at once
// with the file and line (or variable) of the key, suggests the closest
// valid key at any depth, never prints the value of a secret key, reads
// lists from the environment as comma-separated, and keeps free-form
// subtrees and `,inline` extras as they are. mapstructure reports unknown
// keys per struct in one joined string whose wording is not an API (so
// line numbers and suggestions would mean parsing its messages), prints
// the offending values (secrets included), and does not know yaml's
// `,inline`.
package config
