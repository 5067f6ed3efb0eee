package rules

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Load reads the configuration at path and parses it as Parse does: one
// file, or a directory whose every file is read, in its subdirectories
// too, in lexical order of their paths. Names that begin with '.' are
// skipped, files and directories alike (a Kubernetes ConfigMap's ..data
// and ..2024_01_01... entries, editors' swap files), unless
// opts.IncludeDotFiles is set; symbolic links are
// followed (a ConfigMap's files are links into ..data). Errors name files
// by their path relative to path's directory, or path itself for a file.
func Load(path string, opts LoadOptions) (*Config, error) {
	files, err := readFiles(path, opts.IncludeDotFiles)
	if err != nil {
		return nil, err
	}
	return Parse(files, opts)
}

// readFiles reads the files of a configuration at path: a file, or a
// directory's files (those named '.' too when dot is set).
func readFiles(path string, dot bool) ([]File, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if !info.IsDir() {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		return []File{{Name: path, Data: data}}, nil
	}
	var files []File
	if err := walk(path, "", dot, &files, 0); err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return files, nil
}

// maxDepth bounds how deep walk follows directories (and links to
// them, which may loop).
const maxDepth = 16

func walk(root, rel string, dot bool, files *[]File, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: %s: directories nested more than %d deep (a loop of links?)", ErrConfig, filepath.Join(root, rel), maxDepth)
	}
	entries, err := os.ReadDir(filepath.Join(root, rel))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	for _, e := range entries {
		if !dot && strings.HasPrefix(e.Name(), ".") {
			continue
		}
		name := filepath.Join(rel, e.Name())
		full := filepath.Join(root, name)
		info, err := os.Stat(full) // follows links
		if err != nil {
			if e.Type()&fs.ModeSymlink != 0 && os.IsNotExist(err) {
				// A dangling link: a ConfigMap swap in progress removes
				// ..data's old target. The next read sees the new one.
				return fmt.Errorf("%w: %s: %w", ErrConfig, full, err)
			}
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		switch {
		case info.IsDir():
			if err := walk(root, name, dot, files, depth+1); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			data, err := os.ReadFile(full)
			if err != nil {
				return fmt.Errorf("%w: %w", ErrConfig, err)
			}
			*files = append(*files, File{Name: name, Data: data})
		}
	}
	return nil
}
