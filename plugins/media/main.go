// Command media is the bundled media plugin: play_media, pause_media,
// resume_media, stop_media and get_media_status, playing files and HTTP
// streams (internet radio with ICY metadata, m3u and pls playlists) through
// the host's speaker, decoded by ffmpeg as a child of this plugin.
package main

import "github.com/agenthost/agenthost/plugins/sdk"

func main() {
	sdk.Serve(newMedia().plugin())
}
