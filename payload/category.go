package payload

// ValidApp reports whether name is a well-formed app name: 1 to
// MaxAppBytes characters of a-z, 0-9, _ and -, like a category's.
func ValidApp(name string) bool { return validName(name, MaxAppBytes) }

// ValidCategory reports whether name is a well-formed category name: 1 to
// MaxCategoryBytes characters of a-z, 0-9, _ and -. It says nothing of
// whether the operator configured the category; the same rule checks the
// configured names.
func ValidCategory(name string) bool { return validName(name, MaxCategoryBytes) }

// validName: 1 to max characters of a-z, 0-9, _ and -.
func validName(name string, max int) bool {
	if len(name) == 0 || len(name) > max {
		return false
	}
	for i := range len(name) {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
