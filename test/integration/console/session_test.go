package console_test

import (
	"net/http"
	"net/url"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("a browser session of the sign-in link", Label("console", "session"), func() {
	It("is the browser's own, and signing out revokes its cookie wherever it was copied", func(ctx SpecContext) {
		ns := approvalNamespace(ctx)
		s := startConsole(ctx, "carol", "-n", ns)
		base, err := url.Parse(s.Base)
		Expect(err).NotTo(HaveOccurred())
		login, err := url.Parse(s.Login)
		Expect(err).NotTo(HaveOccurred())
		secret := login.Query().Get("secret")

		first, second := signedIn(ctx, s), signedIn(ctx, s)
		cookie := first.Jar.Cookies(base)
		Expect(cookie).To(HaveLen(1))
		Expect(cookie[0].Value).NotTo(Equal(secret), "the cookie is not the sign-in secret")
		Expect(cookie[0].Value).NotTo(Equal(second.Jar.Cookies(base)[0].Value), "each browser has its own session")

		By("a copy of the first browser's cookie works while it is signed in")
		copied := browserless()
		copied.Jar.SetCookies(base, cookie)
		Expect(get(ctx, copied, s.Base+"/").Status).To(Equal(http.StatusOK))

		By("the first browser signs out")
		p := post(ctx, first, s.Base+"/logout", url.Values{"csrf": {csrfOf(get(ctx, first, s.Base+"/"))}}, nil)
		Expect(p.Status).To(Equal(http.StatusSeeOther))
		Expect(get(ctx, first, s.Base+"/").Location).To(Equal("/login"))
		p = get(ctx, copied, s.Base+"/")
		Expect(p.Status).To(Equal(http.StatusSeeOther), "the copied cookie is revoked")
		Expect(p.Location).To(Equal("/login"))
		Expect(get(ctx, copied, s.Base+"/events").Status).To(Equal(http.StatusUnauthorized))

		By("the other browser stays signed in, and the link still signs browsers in")
		Expect(get(ctx, second, s.Base+"/").Status).To(Equal(http.StatusOK))
		Expect(get(ctx, signedIn(ctx, s), s.Base+"/").Status).To(Equal(http.StatusOK))
	})
})
