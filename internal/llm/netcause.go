package llm

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
)

// transportError classifies a failure to exchange bytes with the provider
// (no HTTP status): the cause in words, and whether a retry may help. A
// refused connection, an unknown host, a TLS failure and an unsupported
// scheme cannot; a reset, an early close, a timeout or silence can.
func transportError(err error) *Error {
	e := &Error{Kind: ErrConnection}
	var (
		uerr    *url.Error
		dnsErr  *net.DNSError
		opErr   *net.OpError
		hdrErr  tls.RecordHeaderError
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		badHost x509.HostnameError
		invalid x509.CertificateInvalidError
		netErr  net.Error
		silent  *idleError
	)
	if errors.As(err, &uerr) {
		err = uerr.Err // its text repeats the URL, which Error.URL holds
	}
	addr := ""
	if errors.As(err, &opErr) && opErr.Addr != nil {
		addr = opErr.Addr.String()
	}
	switch {
	case errors.As(err, &silent):
		e.Detail, e.brief, e.idle = silent.Error(), "no data for "+silent.after.String(), true
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Detail, e.final = "connection refused: nothing is listening at "+orUnknown(addr), true
	case errors.As(err, &dnsErr) && !dnsErr.IsTimeout:
		e.Detail = fmt.Sprintf("the host name %q could not be resolved (%s)", dnsErr.Name, dnsErr.Err)
		e.final = true
	case errors.As(err, &dnsErr):
		e.Detail, e.brief = fmt.Sprintf("looking up the host name %q timed out", dnsErr.Name), "DNS timeout"
	case errors.As(err, &hdrErr), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		e.Detail = "the server does not speak TLS; if it is a plain-HTTP server, write http:// in the base URL"
		e.final = true
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &badHost), errors.As(err, &invalid):
		e.Detail, e.final = "the server's TLS certificate is not trusted: "+clip(err.Error()), true
	case strings.Contains(err.Error(), "unsupported protocol scheme"):
		e.Kind, e.final = ErrBaseURL, true
		e.Detail = "the scheme is not http or https"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		e.Detail, e.brief = "the connection was reset", "connection reset"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		e.Detail, e.brief = "the connection closed before the response was complete", "connection closed"
	case errors.Is(err, syscall.ENETUNREACH):
		e.Detail, e.brief = "the network is unreachable", "network unreachable"
	case errors.Is(err, syscall.EHOSTUNREACH):
		e.Detail, e.brief = "the host "+orUnknown(addr)+" is unreachable", "host unreachable"
	case errors.As(err, &netErr) && netErr.Timeout():
		e.Detail, e.brief = "the connection timed out", "timeout"
	default:
		e.Detail, e.brief = clip(err.Error()), "connection failed"
	}
	return e
}

func orUnknown(addr string) string {
	if addr == "" {
		return "the address"
	}
	return addr
}
