// Package fault is Switchboard's one error vocabulary. Every layer returns these kinds;
// the HTTP layer maps each kind to a status in exactly one place (internal/httpio).
package fault

import (
	"errors"
	"fmt"
)

// Kind classifies an error by what the caller can do about it.
type Kind uint8

// The kinds. Their HTTP statuses are assigned by internal/httpio.
const (
	KindInternal       Kind = iota // a defect or an unexpected failure; text never reaches clients
	KindBadRequest                 // malformed body, query parameter missing or malformed
	KindUnauthorized               // missing, malformed or wrong credentials
	KindForbidden                  // a signature or token that does not verify
	KindNotFound                   // unknown, or another owner's, resource
	KindConflict                   // the request contradicts what is already stored
	KindGone                       // the resource existed but is too old
	KindInvalid                    // a well-formed request with an invalid field
	KindTooLarge                   // body over the limit
	KindRateLimited                // too many requests
	KindUnavailable                // the database cannot take the write now
	KindNotImplemented             // routed, not built yet
)

// Error carries a kind, a client-safe message and an optional cause that is logged, never
// shown.
type Error struct {
	Kind    Kind
	Field   string
	Message string
	Cause   error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Message + ": " + e.Cause.Error()
	}
	return e.Message
}

// Unwrap exposes the cause to errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Cause }

// KindOf returns the kind of err, KindInternal for anything outside the vocabulary.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// As returns err's *Error, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// BadRequest reports a malformed request.
func BadRequest(format string, args ...any) error {
	return &Error{Kind: KindBadRequest, Message: fmt.Sprintf(format, args...)}
}

// Unauthorized reports failed authentication.
func Unauthorized(msg string) error { return &Error{Kind: KindUnauthorized, Message: msg} }

// Forbidden reports a signature or token that does not verify.
func Forbidden(msg string) error { return &Error{Kind: KindForbidden, Message: msg} }

// NotFound reports an unknown resource or one that belongs to someone else.
func NotFound(msg string) error { return &Error{Kind: KindNotFound, Message: msg} }

// Conflict reports a request that contradicts stored state.
func Conflict(msg string) error { return &Error{Kind: KindConflict, Message: msg} }

// Gone reports a resource too old to act on.
func Gone(msg string) error { return &Error{Kind: KindGone, Message: msg} }

// Invalid reports an invalid or missing field, naming it.
func Invalid(field, format string, args ...any) error {
	return &Error{Kind: KindInvalid, Field: field, Message: field + " " + fmt.Sprintf(format, args...)}
}

// TooLarge reports a body over the size limit.
func TooLarge(msg string) error { return &Error{Kind: KindTooLarge, Message: msg} }

// RateLimited reports a caller over its rate limit.
func RateLimited() error { return &Error{Kind: KindRateLimited, Message: "too many requests"} }

// Unavailable wraps a failure of the database or another dependency a write needs.
func Unavailable(cause error) error {
	return &Error{Kind: KindUnavailable, Message: "service temporarily unavailable", Cause: cause}
}

// NotImplemented marks a routed feature that is not built yet.
func NotImplemented(what string) error {
	return &Error{Kind: KindNotImplemented, Message: what + " is not implemented yet"}
}

// Internal wraps an unexpected failure; clients only see a generic message.
func Internal(cause error) error {
	return &Error{Kind: KindInternal, Message: "internal error", Cause: cause}
}
