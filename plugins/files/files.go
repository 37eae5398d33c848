// Command files is the agenthost plugin that offers create_file (as the
// voice protocol's seed documents describe it), read_file and list_files,
// all confined to one folder (plugins.config.files.root; by default the
// "files" folder inside the plugin's data folder that the host passes).
//
// Names are relative to that folder; absolute paths, ".." and symbolic links
// that lead outside it are refused (os.Root enforces the last). Files are
// never overwritten unless overwrite is true, and neither writing nor
// reading goes beyond max_bytes (1 MiB by default). A replacement is
// written to a temporary file, synced and renamed over the old one, so a
// full disk cannot leave a file empty. The folder has a quota
// (max_total_bytes, max_files) so a model cannot fill the SD card.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode/utf8"

	"github.com/agenthost/agenthost/plugins/sdk"
)

const version = "1.0.0"

// DefaultMaxBytes is the default size limit for writing and reading a file.
const DefaultMaxBytes = 1 << 20

// DefaultMaxTotalBytes is the default quota for all files in the folder
// together: 32 MiB, well under 1% of the smallest SD card Raspberry Pi OS
// runs from (8 GB); see README.md.
const DefaultMaxTotalBytes = 32 << 20

// DefaultMaxFiles is the default quota for the number of files and folders.
const DefaultMaxFiles = 1000

// maxListEntries bounds a list_files answer.
const maxListEntries = 200

// createFileSchema is the seed's schema for create_file, verbatim.
const createFileSchema = `{
  "type": "object",
  "properties": {
    "filename": {
      "type": "string",
      "description": "Name of the file to create"
    },
    "content": {
      "type": "string",
      "description": "Text to write into the file"
    }
  },
  "required": ["filename", "content"]
}`

const readFileSchema = `{
  "type": "object",
  "properties": {
    "filename": {
      "type": "string",
      "description": "Name of the file to read"
    }
  },
  "required": ["filename"]
}`

const listFilesSchema = `{
  "type": "object",
  "properties": {
    "folder": {
      "type": "string",
      "description": "Sub-folder to list; empty for the top folder"
    }
  }
}`

// Config is plugins.config.files.
type Config struct {
	// Root is the folder the plugin works in, an absolute path. It is
	// created if missing. Default: "files" inside the plugin's data folder
	// (AGENTHOST_PLUGIN_DATA_DIR); without one, root is required.
	Root string `json:"root"`
	// MaxBytes limits the size of a file written or read; default 1 MiB.
	MaxBytes int64 `json:"max_bytes"`
	// MaxTotalBytes limits the bytes of all files in the folder together;
	// default DefaultMaxTotalBytes.
	MaxTotalBytes int64 `json:"max_total_bytes"`
	// MaxFiles limits the number of files, folders and links in the folder;
	// default DefaultMaxFiles.
	MaxFiles int64 `json:"max_files"`
	// Overwrite allows create_file to replace an existing file.
	Overwrite bool `json:"overwrite"`
}

type settings struct {
	root          string
	maxBytes      int64
	maxTotalBytes int64
	maxFiles      int64
	overwrite     bool
}

type files struct {
	cfg     atomic.Pointer[settings]
	dataDir string
	mu      sync.Mutex // serializes create_file
}

func (f *files) plugin() sdk.Plugin {
	return sdk.Plugin{
		Name:    "files",
		Version: version,
		Services: []sdk.Service{
			{Name: "create_file", Description: "Create a local file and write content", Schema: createFileSchema, Handler: f.createFile},
			{Name: "read_file", Description: "Read a text file from the local files folder", Schema: readFileSchema, Handler: f.readFile},
			{Name: "list_files", Description: "List the files in the local files folder", Schema: listFilesSchema, Handler: f.listFiles},
		},
		Configure: f.configure,
	}
}

func (f *files) configure(raw json.RawMessage) error {
	var cfg Config
	if err := sdk.DecodeConfig(raw, &cfg); err != nil {
		return err
	}
	s := settings{root: cfg.Root, maxBytes: cfg.MaxBytes, maxTotalBytes: cfg.MaxTotalBytes, maxFiles: cfg.MaxFiles, overwrite: cfg.Overwrite}
	if s.root == "" {
		if f.dataDir == "" {
			return errors.New("root is not set and the host gave the plugin no data folder; set plugins.config.files.root to an absolute path")
		}
		s.root = filepath.Join(f.dataDir, "files")
	}
	if !filepath.IsAbs(s.root) {
		return fmt.Errorf("root %q must be an absolute path", s.root)
	}
	s.root = filepath.Clean(s.root)
	if s.maxBytes < 0 {
		return fmt.Errorf("max_bytes %d must not be negative", s.maxBytes)
	}
	if s.maxBytes == 0 {
		s.maxBytes = DefaultMaxBytes
	}
	if s.maxTotalBytes < 0 {
		return fmt.Errorf("max_total_bytes %d must not be negative", s.maxTotalBytes)
	}
	if s.maxTotalBytes == 0 {
		s.maxTotalBytes = DefaultMaxTotalBytes
	}
	if s.maxFiles < 0 {
		return fmt.Errorf("max_files %d must not be negative", s.maxFiles)
	}
	if s.maxFiles == 0 {
		s.maxFiles = DefaultMaxFiles
	}
	if err := os.MkdirAll(s.root, 0o750); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("root %q: %v (the plugin runs sandboxed: let it write there with plugins.sandbox.files.write: [%s])", s.root, err, s.root)
		}
		return fmt.Errorf("root %q: %v", s.root, err)
	}
	r, err := os.OpenRoot(s.root)
	if err != nil {
		return fmt.Errorf("root %q: %v", s.root, err)
	}
	r.Close()
	f.cfg.Store(&s)
	return nil
}

// open opens the configured folder for one call.
func (f *files) open() (*os.Root, *settings, error) {
	s := f.cfg.Load()
	if s == nil {
		return nil, nil, errors.New("the files plugin is not configured")
	}
	r, err := os.OpenRoot(s.root)
	if err != nil {
		return nil, nil, fmt.Errorf("the files folder is not available: %v", err)
	}
	return r, s, nil
}

// cleanName checks a name the voice server gave and returns it in clean,
// slash-separated, relative form.
func cleanName(what, name string) (string, error) {
	if strings.TrimSpace(name) == "" {
		return "", sdk.InvalidParams("the %s is empty", what)
	}
	if strings.ContainsRune(name, 0) {
		return "", sdk.InvalidParams("the %s contains a NUL character", what)
	}
	slashed := filepath.ToSlash(name)
	if filepath.IsAbs(name) || strings.HasPrefix(slashed, "/") || filepath.VolumeName(name) != "" {
		return "", sdk.InvalidParams("%q is an absolute path; give a name inside the files folder", name)
	}
	if slices.Contains(strings.Split(slashed, "/"), "..") {
		return "", sdk.InvalidParams("%q contains \"..\"; names must stay inside the files folder", name)
	}
	return path.Clean(slashed), nil
}

// explain turns a file system error into a sentence for a person.
func explain(name string, err error) error {
	var errno syscall.Errno
	switch {
	case strings.Contains(err.Error(), "path escapes from parent"):
		return fmt.Errorf("%q leads outside the files folder (through a symbolic link); refused", name)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("there is no file or folder named %q", name)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("no permission to access %q", name)
	case errors.As(err, &errno) && errno == syscall.ENAMETOOLONG:
		return fmt.Errorf("the name %q is too long", name)
	case errors.As(err, &errno) && errno == syscall.ENOSPC:
		return errors.New("the disk is full")
	case errors.As(err, &errno) && errno == syscall.ENOTDIR:
		return fmt.Errorf("a part of %q is a file, not a folder", name)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%q: %v", name, pe.Err)
	}
	return fmt.Errorf("%q: %v", name, err)
}

func (f *files) createFile(_ context.Context, p sdk.Params) (any, error) {
	name, err := cleanName("filename", p.String("filename"))
	if err != nil {
		return nil, err
	}
	if name == "." {
		return nil, sdk.InvalidParams("the filename names the files folder itself")
	}
	root, s, err := f.open()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	content := p.String("content")
	if int64(len(content)) > s.maxBytes {
		return nil, fmt.Errorf("the content is %d bytes; the limit is %d bytes", len(content), s.maxBytes)
	}
	// One create at a time, so that two calls cannot both pass the quota.
	f.mu.Lock()
	defer f.mu.Unlock()
	old, err := existing(root, name, s.overwrite)
	if err != nil {
		return nil, err
	}
	if err := checkQuota(root, s, name, old, int64(len(content))); err != nil {
		return nil, err
	}
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o750); err != nil {
			return nil, explain(dir, err)
		}
	}
	if s.overwrite {
		err = replace(root, name, content, old)
	} else {
		err = writeNew(root, name, content)
	}
	if err != nil {
		return nil, err
	}
	syncDir(root, path.Dir(name))
	verb := "Created"
	if old != nil {
		verb = "Replaced"
	}
	return fmt.Sprintf("%s %s (%d bytes)", verb, name, len(content)), nil
}

// existing returns the regular file create_file would replace, nil if there
// is none, or an error if name may not be written.
func existing(root *os.Root, name string, overwrite bool) (fs.FileInfo, error) {
	st, err := root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, explain(name, err)
	case st.IsDir():
		return nil, fmt.Errorf("%q is a folder", name)
	case !overwrite:
		return nil, fmt.Errorf("%q already exists, and overwriting files is turned off", name)
	case st.Mode()&fs.ModeSymlink != 0:
		if _, err := root.Stat(name); err != nil {
			return nil, explain(name, err)
		}
		return nil, fmt.Errorf("%q is a symbolic link; create_file does not replace links", name)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%q is not a regular file", name)
	}
	return st, nil
}

// writeNew creates name, which must not exist, with content. A failed write
// removes the partial file.
func writeNew(root *os.Root, name, content string) error {
	fh, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%q already exists, and overwriting files is turned off", name)
		}
		return explain(name, err)
	}
	if err := writeSync(fh, content); err != nil {
		root.Remove(name)
		return explain(name, err)
	}
	return nil
}

// replace writes content to a temporary file next to name, syncs it and
// renames it over name, so a failure (a full disk) leaves the old file as
// it was and no temporary file behind. old is the file replaced, or nil.
func replace(root *os.Root, name, content string, old fs.FileInfo) error {
	var tmp string
	var fh *os.File
	for range 10 {
		tmp = fmt.Sprintf("%s.create_file-%08x.tmp", path.Dir(name)+"/", rand.Uint32())
		var err error
		fh, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return explain(name, err)
		}
	}
	if fh == nil {
		return fmt.Errorf("%q: could not pick a name for a temporary file", name)
	}
	var err error
	if old != nil {
		err = fh.Chmod(old.Mode().Perm()) // the replacement keeps the old file's mode
	}
	if err == nil {
		err = writeSync(fh, content)
	} else {
		fh.Close()
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
		return explain(name, err)
	}
	return nil
}

// writeSync writes content to fh, syncs and closes it.
func writeSync(fh *os.File, content string) error {
	_, err := io.WriteString(fh, content)
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes a new or renamed entry in dir durable. It is best effort:
// the file is written by then, and some file systems cannot sync a folder.
func syncDir(root *os.Root, dir string) {
	if d, err := root.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// checkQuota refuses a write that would take the folder over max_files or
// max_total_bytes. old is the file being replaced, or nil.
func checkQuota(root *os.Root, s *settings, name string, old fs.FileInfo, size int64) error {
	entries, total, err := usage(root, s.maxFiles)
	if err != nil {
		return err
	}
	added := int64(0) // entries this call adds: the file and missing folders
	if old == nil {
		added = 1
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			if _, err := root.Lstat(dir); err == nil {
				break
			}
			added++
		}
	}
	if entries+added > s.maxFiles {
		return fmt.Errorf("the files folder holds %d files and folders and this file needs %d more, over the limit of %d; "+
			"the owner can raise plugins.config.files.max_files in the host's config", entries, added, s.maxFiles)
	}
	after := total + size
	if old != nil {
		after -= old.Size()
	}
	if after > s.maxTotalBytes && after > total {
		return fmt.Errorf("the files folder holds %d bytes and this file would take it to %d, over the limit of %d bytes; "+
			"the owner can raise plugins.config.files.max_total_bytes in the host's config", total, after, s.maxTotalBytes)
	}
	return nil
}

// usage counts the entries below root (files, folders, links; root itself
// not) and the bytes of its regular files. It stops counting once entries
// pass limit, which is then over the quota anyway.
func usage(root *os.Root, limit int64) (entries, bytes int64, err error) {
	errStop := errors.New("stop")
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if entries++; entries > limit {
			return errStop
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			bytes += info.Size()
		}
		return nil
	})
	if err != nil && err != errStop {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return 0, 0, fmt.Errorf("cannot measure the files folder for its quota: %v", explain(pe.Path, pe.Err))
		}
		return 0, 0, fmt.Errorf("cannot measure the files folder for its quota: %v", err)
	}
	return entries, bytes, nil
}

func (f *files) readFile(_ context.Context, p sdk.Params) (any, error) {
	name, err := cleanName("filename", p.String("filename"))
	if err != nil {
		return nil, err
	}
	root, s, err := f.open()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fh, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, explain(name, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, explain(name, err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%q is a folder; list_files lists it", name)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%q is not a regular file", name)
	}
	if st.Size() > s.maxBytes {
		return nil, fmt.Errorf("%q is %d bytes; the limit for reading is %d bytes", name, st.Size(), s.maxBytes)
	}
	b, err := io.ReadAll(io.LimitReader(fh, s.maxBytes+1))
	if err != nil {
		return nil, explain(name, err)
	}
	if int64(len(b)) > s.maxBytes {
		return nil, fmt.Errorf("%q is larger than the limit of %d bytes", name, s.maxBytes)
	}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%q is not a text file", name)
	}
	return string(b), nil
}

// Entry is one item of a list_files answer.
type Entry struct {
	Name string `json:"name"`
	// Type is "file", "folder", "link" or "other".
	Type string `json:"type"`
	Size int64  `json:"size,omitempty"`
}

// Listing is list_files' answer.
type Listing struct {
	Folder    string  `json:"folder"`
	Entries   []Entry `json:"entries"`
	Truncated bool    `json:"truncated,omitempty"`
}

func (f *files) listFiles(_ context.Context, p sdk.Params) (any, error) {
	folder := "."
	if p.String("folder") != "" {
		var err error
		if folder, err = cleanName("folder", p.String("folder")); err != nil {
			return nil, err
		}
	}
	root, _, err := f.open()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	dir, err := root.Open(folder)
	if err != nil {
		return nil, explain(folder, err)
	}
	defer dir.Close()
	st, err := dir.Stat()
	if err != nil {
		return nil, explain(folder, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%q is a file, not a folder", folder)
	}
	des, err := dir.ReadDir(-1)
	if err != nil {
		return nil, explain(folder, err)
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	out := Listing{Folder: folder, Entries: []Entry{}}
	for _, de := range des {
		if len(out.Entries) == maxListEntries {
			out.Truncated = true
			break
		}
		e := Entry{Name: de.Name()}
		switch t := de.Type(); {
		case t.IsDir():
			e.Type = "folder"
		case t&fs.ModeSymlink != 0:
			e.Type = "link"
		case t.IsRegular():
			e.Type = "file"
			if info, err := de.Info(); err == nil {
				e.Size = info.Size()
			}
		default:
			e.Type = "other"
		}
		out.Entries = append(out.Entries, e)
	}
	return out, nil
}
